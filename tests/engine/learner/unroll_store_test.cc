#include "engine/learner/unroll_store.h"

#include <cstring>
#include <stdexcept>
#include <vector>

#include <gtest/gtest.h>

#include "engine/learner/prefetcher.h"
#include "rpc/messages.h"

namespace moonseed::engine {
namespace {

constexpr int64_t kT = 3;

// Observations are float32[2] = {slot, step}; discrete actions.
UnrollShape discrete_shape() {
  UnrollShape shape;
  shape.unroll_length = kT;
  shape.observation_shape = {2};
  shape.observation_dtype = envs::DType::kFloat32;
  shape.action_kind = envs::SpaceKind::kDiscrete;
  return shape;
}

struct Obs {
  float values[2];
  const uint8_t* bytes() const { return reinterpret_cast<const uint8_t*>(values); }
};

float obs_at(const Unroll& u, int64_t t, int i) {
  float v[2];
  std::memcpy(v, u.observations.data() + t * sizeof v, sizeof v);
  return v[i];
}

int64_t action_at(const Unroll& u, int64_t t) {
  int64_t a;
  std::memcpy(&a, u.actions.data() + t * sizeof a, sizeof a);
  return a;
}

// Drives one slot the way the inference thread does.
class SlotDriver {
 public:
  SlotDriver(UnrollStore& store, int slot) : store_(store), slot_(slot) {}

  // observe(x) then act(a); returns the unroll observe() emitted, if any.
  UnrollPtr step(float x, float reward, uint8_t flags, int64_t action, float logp = -0.5f,
                 int64_t version = 7) {
    Obs o{{static_cast<float>(slot_), x}};
    UnrollPtr done = store_.observe(slot_, o.bytes(), reward, flags);
    store_.act(slot_, &action, logp, version);
    return done;
  }

 private:
  UnrollStore& store_;
  int slot_;
};

TEST(UnrollStore, RecordsTheConfigVersionOfEachStepAndCarriesStepTIntoTheNextUnroll) {
  UnrollStore store(1, UnrollPool::create(discrete_shape()));
  const int64_t action = 0;
  const uint64_t versions[] = {4, 4, 5, 5, 6, 6, 6, 7};
  std::vector<UnrollPtr> done;
  for (int t = 0; t < 8; ++t) {
    Obs o{{0.f, static_cast<float>(t)}};
    UnrollPtr u = store.observe(0, o.bytes(), 1.f, t == 0 ? envs::kFirst : 0, versions[t]);
    store.act(0, &action, -0.5f, 1);
    if (u) done.push_back(std::move(u));
  }
  ASSERT_EQ(done.size(), 2u);  // steps 0..3, then 3..6 (overlap 1)
  EXPECT_EQ(done[0]->config_version, (std::vector<uint64_t>{4, 4, 5, 5}));
  EXPECT_EQ(done[1]->config_version, (std::vector<uint64_t>{5, 6, 6, 6}));
}

TEST(UnrollStore, EmitsOneUnrollAfterTPlusOneObservationsWithEveryStepRecorded) {
  UnrollStore store(1, UnrollPool::create(discrete_shape()));
  SlotDriver env(store, 0);
  EXPECT_FALSE(env.step(0, 0.f, envs::kFirst, 10, -0.1f, 1));
  EXPECT_FALSE(env.step(1, 1.f, 0, 11, -0.2f, 1));
  EXPECT_FALSE(env.step(2, 2.f, 0, 12, -0.3f, 2));
  UnrollPtr u = env.step(3, 3.f, 0, 13, -0.4f, 2);
  ASSERT_TRUE(u);

  EXPECT_EQ(u->slot, 0);
  for (int64_t t = 0; t <= kT; ++t) {
    EXPECT_EQ(obs_at(*u, t, 1), static_cast<float>(t)) << "t=" << t;
    EXPECT_EQ(u->valid[t], 1) << "t=" << t;
  }
  // a_t, mu and version were recorded at step t; r_t came with x_{t+1}.
  for (int64_t t = 0; t < kT; ++t) {
    EXPECT_EQ(action_at(*u, t), 10 + t);
    EXPECT_EQ(u->rewards[t], static_cast<float>(t + 1));
    EXPECT_EQ(u->terminated[t], 0);
    EXPECT_EQ(u->truncated[t], 0);
  }
  EXPECT_FLOAT_EQ(u->behaviour_logp[0], -0.1f);
  EXPECT_FLOAT_EQ(u->behaviour_logp[2], -0.3f);
  EXPECT_EQ(u->policy_version[0], 1);
  EXPECT_EQ(u->policy_version[2], 2);
  EXPECT_EQ(store.stats().unrolls, 1);
}

TEST(UnrollStore, StepTOfAnEmittedUnrollHoldsOnlyTheObservation) {
  UnrollStore store(1, UnrollPool::create(discrete_shape()));
  SlotDriver env(store, 0);
  UnrollPtr u;
  for (int i = 0; i <= kT; ++i) u = env.step(static_cast<float>(i), 5.f, i == 0 ? envs::kFirst : 0, 9);
  ASSERT_TRUE(u);
  // x_T is emitted as soon as it arrives, before its action exists.
  EXPECT_EQ(obs_at(*u, kT, 1), static_cast<float>(kT));
  EXPECT_EQ(action_at(*u, kT), 0);
  EXPECT_EQ(u->behaviour_logp[kT], 0.f);
  EXPECT_EQ(u->rewards[kT], 0.f);
  EXPECT_EQ(u->policy_version[kT], 0);
}

TEST(UnrollStore, TheLastStepOfAnUnrollIsTheFirstStepOfTheNext) {
  UnrollStore store(1, UnrollPool::create(discrete_shape()));
  SlotDriver env(store, 0);
  std::vector<UnrollPtr> out;
  for (int i = 0; i <= 2 * kT; ++i) {
    UnrollPtr u = env.step(static_cast<float>(i), static_cast<float>(i), i == 0 ? envs::kFirst : 0,
                           100 + i);
    if (u) out.push_back(std::move(u));
  }
  ASSERT_EQ(out.size(), 2u);
  const Unroll& second = *out[1];
  for (int64_t t = 0; t <= kT; ++t) EXPECT_EQ(obs_at(second, t, 1), static_cast<float>(kT + t));
  // Step 0 of the second unroll got its action from the act() after x_T,
  // and its reward from the observe() after that.
  EXPECT_EQ(action_at(second, 0), 100 + kT);
  EXPECT_EQ(second.rewards[0], static_cast<float>(kT + 1));
}

TEST(UnrollStore, AFinalObservationStepIsInvalidAndItsRewardSitsOnTheStepThatEndedTheEpisode) {
  UnrollStore store(1, UnrollPool::create(discrete_shape()));
  SlotDriver env(store, 0);
  EXPECT_FALSE(env.step(0, 0.f, envs::kFirst, 1));
  // a_0 ends the episode: x_1 is the final observation, sent with the last reward.
  EXPECT_FALSE(env.step(1, 4.f, envs::kTerminated, 1));
  // The actor ignored a_1, reset, and sends the first observation of a new episode.
  EXPECT_FALSE(env.step(2, 0.f, envs::kFirst, 1));
  UnrollPtr u = env.step(3, 1.f, 0, 1);
  ASSERT_TRUE(u);

  EXPECT_EQ(u->valid[0], 1);
  EXPECT_EQ(u->rewards[0], 4.f);
  EXPECT_EQ(u->terminated[0], 1);
  EXPECT_EQ(u->truncated[0], 0);

  EXPECT_EQ(u->valid[1], 0);  // x_1 is final: its action did nothing
  EXPECT_EQ(u->rewards[1], 0.f);
  EXPECT_EQ(u->terminated[1], 0);

  EXPECT_EQ(u->valid[2], 1);  // reset observation
  EXPECT_EQ(u->rewards[2], 1.f);
  EXPECT_EQ(u->terminated[2], 0);
}

TEST(UnrollStore, TruncationIsRecordedAsTruncatedNotTerminated) {
  UnrollStore store(1, UnrollPool::create(discrete_shape()));
  SlotDriver env(store, 0);
  env.step(0, 0.f, envs::kFirst, 1);
  env.step(1, 1.f, envs::kTruncated, 1);
  env.step(2, 0.f, envs::kFirst, 1);
  UnrollPtr u = env.step(3, 1.f, 0, 1);
  ASSERT_TRUE(u);
  EXPECT_EQ(u->truncated[0], 1);
  EXPECT_EQ(u->terminated[0], 0);
  EXPECT_EQ(u->valid[1], 0);
}

TEST(UnrollStore, AnEpisodeEndingOnStepTCarriesTheFinalObservationIntoTheNextUnroll) {
  UnrollStore store(1, UnrollPool::create(discrete_shape()));
  SlotDriver env(store, 0);
  env.step(0, 0.f, envs::kFirst, 1);
  env.step(1, 1.f, 0, 1);
  env.step(2, 1.f, 0, 1);
  UnrollPtr first = env.step(3, 1.f, envs::kTerminated, 1);
  ASSERT_TRUE(first);
  EXPECT_EQ(first->terminated[kT - 1], 1);
  EXPECT_EQ(first->valid[kT], 0);

  env.step(4, 0.f, envs::kFirst, 1);
  env.step(5, 2.f, 0, 1);
  UnrollPtr second = env.step(6, 2.f, 0, 1);
  ASSERT_TRUE(second);
  EXPECT_EQ(obs_at(*second, 0, 1), 3.f);
  EXPECT_EQ(second->valid[0], 0);
  EXPECT_EQ(second->rewards[0], 0.f);
  EXPECT_EQ(second->terminated[0], 0);
  EXPECT_EQ(second->valid[1], 1);
}

TEST(UnrollStore, ReportsTheReturnAndLengthOfEachFinishedEpisode) {
  UnrollStore store(2, UnrollPool::create(discrete_shape()));
  SlotDriver a(store, 0), b(store, 1);
  a.step(0, 0.f, envs::kFirst, 1);
  b.step(0, 0.f, envs::kFirst, 1);
  a.step(1, 1.5f, 0, 1);
  b.step(1, -1.f, envs::kTruncated, 1);
  a.step(2, 2.f, 0, 1);
  a.step(3, 3.f, envs::kTerminated, 1);
  b.step(2, 0.f, envs::kFirst, 1);

  std::vector<EpisodeResult> episodes;
  store.take_finished_episodes(episodes);
  ASSERT_EQ(episodes.size(), 2u);
  EXPECT_EQ(episodes[0].slot, 1);
  EXPECT_DOUBLE_EQ(episodes[0].episode_return, -1.0);
  EXPECT_EQ(episodes[0].length, 1);
  EXPECT_TRUE(episodes[0].truncated);
  EXPECT_EQ(episodes[1].slot, 0);
  EXPECT_DOUBLE_EQ(episodes[1].episode_return, 6.5);
  EXPECT_EQ(episodes[1].length, 3);
  EXPECT_FALSE(episodes[1].truncated);

  episodes.clear();
  store.take_finished_episodes(episodes);
  EXPECT_TRUE(episodes.empty());
}

TEST(UnrollStore, AnEpisodeWhoseStartWasNotSeenIsNotReported) {
  UnrollStore store(1, UnrollPool::create(discrete_shape()));
  SlotDriver env(store, 0);
  env.step(7, 0.f, 0, 1);  // joined mid-episode: no kFirst
  env.step(8, 1.f, envs::kTerminated, 1);
  env.step(0, 0.f, envs::kFirst, 1);
  env.step(1, 2.f, envs::kTerminated, 1);
  std::vector<EpisodeResult> episodes;
  store.take_finished_episodes(episodes);
  ASSERT_EQ(episodes.size(), 1u);
  EXPECT_DOUBLE_EQ(episodes[0].episode_return, 2.0);
}

TEST(UnrollStore, AFirstObservationAfterAValidStepDropsThePartialUnroll) {
  UnrollStore store(1, UnrollPool::create(discrete_shape()));
  SlotDriver env(store, 0);
  env.step(0, 0.f, envs::kFirst, 1);
  env.step(1, 1.f, 0, 1);
  // The actor reconnected and restarted its envs: no final observation came.
  env.step(10, 0.f, envs::kFirst, 1);
  env.step(11, 1.f, 0, 1);
  env.step(12, 1.f, 0, 1);
  UnrollPtr u = env.step(13, 1.f, envs::kTerminated, 1);
  ASSERT_TRUE(u);
  for (int64_t t = 0; t <= kT; ++t) EXPECT_EQ(obs_at(*u, t, 1), 10.f + t);
  EXPECT_EQ(store.stats().interrupted_episodes, 1);
  std::vector<EpisodeResult> episodes;
  store.take_finished_episodes(episodes);
  ASSERT_EQ(episodes.size(), 1u);
  EXPECT_DOUBLE_EQ(episodes[0].episode_return, 3.0);
}

TEST(UnrollStore, SlotsFillTheirOwnUnrollsIndependently) {
  UnrollStore store(2, UnrollPool::create(discrete_shape()));
  SlotDriver a(store, 0), b(store, 1);
  b.step(100, 0.f, envs::kFirst, 1);
  for (int i = 0; i < kT; ++i) EXPECT_FALSE(a.step(static_cast<float>(i), 0.f, i == 0 ? envs::kFirst : 0, 1));
  UnrollPtr ua = a.step(static_cast<float>(kT), 0.f, 0, 1);
  ASSERT_TRUE(ua);
  EXPECT_EQ(ua->slot, 0);
  for (int64_t t = 0; t <= kT; ++t) EXPECT_EQ(obs_at(*ua, t, 0), 0.f);
  for (int i = 1; i < kT; ++i) EXPECT_FALSE(b.step(100.f + i, 0.f, 0, 1));
  UnrollPtr ub = b.step(100.f + kT, 0.f, 0, 1);
  ASSERT_TRUE(ub);
  EXPECT_EQ(ub->slot, 1);
  EXPECT_EQ(obs_at(*ub, 0, 1), 100.f);
}

TEST(UnrollStore, ResetSlotStartsTheSlotAfresh) {
  UnrollStore store(1, UnrollPool::create(discrete_shape()));
  SlotDriver env(store, 0);
  env.step(0, 0.f, envs::kFirst, 1);
  env.step(1, 1.f, 0, 1);
  store.reset_slot(0);
  for (int i = 0; i < kT; ++i) EXPECT_FALSE(env.step(20.f + i, 0.f, i == 0 ? envs::kFirst : 0, 1));
  UnrollPtr u = env.step(20.f + kT, 0.f, 0, 1);
  ASSERT_TRUE(u);
  EXPECT_EQ(obs_at(*u, 0, 1), 20.f);
}

TEST(UnrollStore, NumbersEpisodesAndTheirStepsForTheLog) {
  UnrollStore store(2, UnrollPool::create(discrete_shape()));
  store.set_next_episode_id(40);
  SlotDriver a(store, 0), b(store, 1);
  a.step(0, 0.f, envs::kFirst, 1);         // episode 40, step 0
  b.step(100, 0.f, 0, 1);                 // slot 1's first observation, no kFirst: episode 41
  a.step(1, 1.f, envs::kTerminated, 1);    // 40, step 1: the final observation
  a.step(2, 0.f, envs::kFirst, 1);         // episode 42 (ids are taken in order of starts)
  UnrollPtr u = a.step(3, 1.f, 0, 1);     // 42, step 1
  ASSERT_TRUE(u);
  EXPECT_EQ(u->episode_id, (std::vector<int64_t>{40, 40, 42, 42}));
  EXPECT_EQ(u->episode_step, (std::vector<int64_t>{0, 1, 0, 1}));
  EXPECT_EQ(u->obs_flags, (std::vector<uint8_t>{envs::kFirst, envs::kTerminated, envs::kFirst, 0}));
  EXPECT_GT(u->wall_time_ns, 0);
  // Step T comes back as step 0 of the next unroll, with its numbering.
  for (int i = 4; i < 3 + kT; ++i) a.step(static_cast<float>(i), 1.f, 0, 1);
  UnrollPtr next = a.step(static_cast<float>(3 + kT), 1.f, 0, 1);
  ASSERT_TRUE(next);
  EXPECT_EQ(next->episode_id, (std::vector<int64_t>{42, 42, 42, 42}));
  EXPECT_EQ(next->episode_step, (std::vector<int64_t>{1, 2, 3, 4}));
  EXPECT_EQ(next->obs_flags[0], 0);
  // An episode interrupted by a restart, and a reset slot, start new ids.
  b.step(101, 1.f, 0, 1);
  b.step(200, 0.f, envs::kFirst, 1);  // 43
  store.reset_slot(1);
  b.step(300, 0.f, 0, 1);  // 44
  b.step(301, 1.f, 0, 1);
  b.step(302, 1.f, 0, 1);
  UnrollPtr ub = b.step(303, 1.f, 0, 1);
  ASSERT_TRUE(ub);
  EXPECT_EQ(ub->episode_id, (std::vector<int64_t>{44, 44, 44, 44}));
  EXPECT_EQ(ub->episode_step, (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_THROW(store.set_next_episode_id(0), std::logic_error);  // after observations
}

TEST(UnrollStore, StoresBoxActionsAsFloatVectors) {
  UnrollShape shape = discrete_shape();
  shape.action_kind = envs::SpaceKind::kBox;
  shape.action_dim = 2;
  UnrollStore store(1, UnrollPool::create(shape));
  for (int t = 0; t <= kT; ++t) {
    Obs o{{0.f, static_cast<float>(t)}};
    UnrollPtr u = store.observe(0, o.bytes(), 0.f, t == 0 ? envs::kFirst : 0);
    if (t == kT) {
      ASSERT_TRUE(u);
      float a[2];
      std::memcpy(a, u->actions.data() + 1 * sizeof a, sizeof a);
      EXPECT_EQ(a[0], 1.f);
      EXPECT_EQ(a[1], -1.f);
      EXPECT_EQ(u->actions.size(), (kT + 1) * sizeof a);
    }
    const float action[2] = {static_cast<float>(t), -static_cast<float>(t)};
    store.act(0, action, 0.f, 0);
  }
}

TEST(UnrollStore, ThePoolStaysBoundedAcrossManyUnrolls) {
  auto pool = UnrollPool::create(discrete_shape());
  UnrollStore store(4, pool);
  std::vector<SlotDriver> envs;
  for (int s = 0; s < 4; ++s) envs.emplace_back(store, s);
  int emitted = 0;
  for (int i = 0; i < 1000; ++i) {
    for (int s = 0; s < 4; ++s) {
      const uint8_t flags = i == 0 ? envs::kFirst : (i % 37 == 0 ? envs::kTerminated : 0);
      UnrollPtr u = envs[static_cast<size_t>(s)].step(static_cast<float>(i), 1.f, flags, 1);
      if (u) ++emitted;  // released at the end of this scope, as the prefetcher does
    }
  }
  EXPECT_EQ(emitted, 4 * (999 / kT));
  // One unroll in progress per slot plus the one being handed over.
  EXPECT_LE(pool->allocated(), 5);
}

TEST(UnrollStore, ReleasedUnrollsReturnToThePool) {
  auto pool = UnrollPool::create(discrete_shape(), 3);
  EXPECT_EQ(pool->allocated(), 3);
  EXPECT_EQ(pool->available(), 3);
  {
    UnrollPtr a = pool->acquire();
    UnrollPtr b = pool->acquire();
    EXPECT_EQ(pool->available(), 1);
  }
  EXPECT_EQ(pool->available(), 3);
  EXPECT_EQ(pool->allocated(), 3);
}

TEST(UnrollStore, ObservingTwiceWithoutActingIsACallerBug) {
  UnrollStore store(1, UnrollPool::create(discrete_shape()));
  Obs o{{0.f, 0.f}};
  store.observe(0, o.bytes(), 0.f, envs::kFirst);
  EXPECT_THROW(store.observe(0, o.bytes(), 0.f, 0), std::logic_error);
}

TEST(UnrollStore, ActingWithoutAnObservationIsACallerBug) {
  UnrollStore store(1, UnrollPool::create(discrete_shape()));
  int64_t a = 0;
  EXPECT_THROW(store.act(0, &a, 0.f, 0), std::logic_error);
}

TEST(UnrollStore, ASlotOutOfRangeIsRejected) {
  UnrollStore store(2, UnrollPool::create(discrete_shape()));
  Obs o{{0.f, 0.f}};
  EXPECT_THROW(store.observe(2, o.bytes(), 0.f, envs::kFirst), std::invalid_argument);
  EXPECT_THROW(store.observe(-1, o.bytes(), 0.f, envs::kFirst), std::invalid_argument);
}

// A recurrent policy's state: each unroll keeps the one its step 0 acted with, including the
// step it shares with the previous unroll (x_T, then x_0 of the next), and the collated batch
// stacks them as start_h and start_c.
TEST(UnrollStore, EachUnrollKeepsTheStateItsStepZeroActedWithAndABatchStacksThem) {
  UnrollShape shape = discrete_shape();
  shape.state_size = 2;
  UnrollStore store(1, UnrollPool::create(shape));
  std::vector<UnrollPtr> done;
  for (int t = 0; t <= 2 * kT; ++t) {
    Obs o{{0, static_cast<float>(t)}};
    UnrollPtr u = store.observe(0, o.bytes(), 1.f, t == 0 ? envs::kFirst : 0);
    if (u) done.push_back(std::move(u));
    const int64_t action = 0;
    const float h[2] = {static_cast<float>(t), 10.f + t}, c[2] = {100.f + t, 1000.f + t};
    const int64_t prev = t - 1;
    const RecurrentInputs inputs{h, c, &prev, 0.5f * t};
    store.act(0, &action, -0.5f, 0, &inputs);
  }
  ASSERT_EQ(done.size(), 2u);
  EXPECT_EQ(done[0]->start_state, (std::vector<float>{0, 10, 100, 1000}));
  EXPECT_EQ(done[1]->start_state, (std::vector<float>{3, 13, 103, 1003}));  // x_3: step 0 of the second
  const UnrollBatch batch = collate_unrolls(done, shape, false);
  EXPECT_TRUE(torch::equal(batch.start_h, torch::tensor({{0.f, 10.f}, {3.f, 13.f}})));
  EXPECT_TRUE(torch::equal(batch.start_c, torch::tensor({{100.f, 1000.f}, {103.f, 1003.f}})));
  EXPECT_TRUE(torch::equal(batch.start_prev_action, torch::tensor({-1, 2}, torch::kInt64)));
  EXPECT_TRUE(torch::equal(batch.start_prev_reward, torch::tensor({0.f, 1.5f})));
  // A feed-forward shape keeps none (an experience log's unrolls come from such a pool).
  UnrollStore plain_store(1, UnrollPool::create(discrete_shape()));
  SlotDriver plain(plain_store, 0);
  std::vector<UnrollPtr> mixed;
  for (int t = 0; t <= kT; ++t) {
    if (UnrollPtr u = plain.step(static_cast<float>(t), 1.f, t == 0 ? envs::kFirst : 0, 0)) mixed.push_back(std::move(u));
  }
  ASSERT_EQ(mixed.size(), 1u);
  EXPECT_TRUE(mixed[0]->start_state.empty());
  EXPECT_FALSE(collate_unrolls(mixed, discrete_shape(), false).start_h.defined());
  // Such an unroll in a recurrent batch (a warm start) collates as a zero state with no previous
  // action or reward.
  mixed.push_back(std::move(done[1]));
  const UnrollBatch with_log = collate_unrolls(mixed, shape, false);
  EXPECT_TRUE(torch::equal(with_log.start_h, torch::tensor({{0.f, 0.f}, {3.f, 13.f}})));
  EXPECT_TRUE(torch::equal(with_log.start_c, torch::tensor({{0.f, 0.f}, {103.f, 1003.f}})));
  EXPECT_TRUE(torch::equal(with_log.start_prev_action, torch::tensor({-1, 2}, torch::kInt64)));
  EXPECT_TRUE(torch::equal(with_log.start_prev_reward, torch::tensor({0.f, 1.5f})));
}

TEST(UnrollShape, FromSpecStoresDiscreteActionsAsInt64AndBoxActionsAsFloats) {
  envs::EnvSpec spec;
  spec.id = "Test";
  spec.observation.kind = envs::SpaceKind::kBox;
  spec.observation.shape = {3, 2};
  spec.action.kind = envs::SpaceKind::kDiscrete;
  spec.action.n = 4;
  UnrollShape d = UnrollShape::from_spec(spec, 20);
  EXPECT_EQ(d.unroll_length, 20);
  EXPECT_EQ(d.observation_bytes(), 24);
  EXPECT_EQ(d.action_bytes(), 8);

  spec.action.kind = envs::SpaceKind::kBox;
  spec.action.shape = {3};
  UnrollShape b = UnrollShape::from_spec(spec, 20);
  EXPECT_EQ(b.action_dim, 3);
  EXPECT_EQ(b.action_bytes(), 12);
}

}  // namespace
}  // namespace moonseed::engine
