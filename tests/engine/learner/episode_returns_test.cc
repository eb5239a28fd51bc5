#include "engine/learner/episode_returns.h"

#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "envs/env.h"

namespace moonseed::engine {
namespace {

// An UnrollStore (what the V-trace agent sums its episodes with, both returns
// in one place): the actor's shaping adds 10 to every env reward, as a shaping
// function that pays a bonus per step would.
class Slots {
 public:
  explicit Slots(int n) : store_(n, UnrollPool::create(shape())) {}

  void step(int slot, float env_reward, uint8_t flags) {
    const float obs[2] = {0.f, 0.f};
    const float shaped = (flags & envs::kFirst) ? 0.f : env_reward + 10.f;
    store_.observe(slot, reinterpret_cast<const uint8_t*>(obs), shaped, flags, 0, env_reward);
    const int64_t action = 0;
    store_.act(slot, &action, 0.f, 0);
  }
  void reset_slot(int slot) { store_.reset_slot(slot); }
  EpisodeCounts count(EpisodeMeans& means, const std::vector<bool>& eval_slot) {
    std::vector<EpisodeResult> finished;
    store_.take_finished_episodes(finished);
    return means.add(finished, eval_slot);
  }

 private:
  static UnrollShape shape() {
    UnrollShape s;
    s.unroll_length = 4;
    s.observation_shape = {2};
    return s;
  }
  UnrollStore store_;
};

TEST(EpisodeReturns, EachFinishedEpisodeHasTheEnvsOwnReturnBesideTheShapedOne) {
  Slots slots(2);
  EpisodeMeans means;
  const std::vector<bool> eval_slot = {false, true};
  // The learner counts after each inference batch, where a slot has one step.
  EpisodeCounts counts;
  auto count = [&] {
    const EpisodeCounts c = slots.count(means, eval_slot);
    counts.episodes += c.episodes;
    counts.eval_episodes += c.eval_episodes;
  };
  // Slot 0: 3 steps paying 1, then a 1-step episode paying -1; slot 1
  // evaluates: 2 steps paying 1.
  slots.step(0, 0.f, envs::kFirst);
  slots.step(1, 0.f, envs::kFirst);
  count();
  slots.step(0, 1.f, 0);
  slots.step(1, 1.f, 0);
  count();
  slots.step(0, 1.f, 0);
  slots.step(1, 1.f, envs::kTerminated);
  count();
  slots.step(0, 1.f, envs::kTerminated);
  count();
  slots.step(0, 0.f, envs::kFirst);
  count();
  slots.step(0, -1.f, envs::kTruncated);
  count();
  EXPECT_EQ(counts.episodes, 2);
  EXPECT_EQ(counts.eval_episodes, 1);

  LearnerStats s;
  means.fill(s);
  EXPECT_DOUBLE_EQ(s.return_mean, (3.0 - 1.0) / 2);
  EXPECT_DOUBLE_EQ(s.shaped_return_mean, (33.0 + 9.0) / 2);
  EXPECT_DOUBLE_EQ(s.length_mean, 2.0);
  EXPECT_DOUBLE_EQ(s.eval_return_mean, 2.0);
  EXPECT_DOUBLE_EQ(s.eval_shaped_return_mean, 22.0);
}

TEST(EpisodeReturns, ASlotResetForgetsTheEnvRewardsOfItsInterruptedEpisode) {
  Slots slots(1);
  EpisodeMeans means;
  slots.step(0, 0.f, envs::kFirst);
  slots.step(0, 5.f, 0);
  slots.reset_slot(0);  // its actor went away
  slots.step(0, 0.f, envs::kFirst);
  slots.step(0, 1.f, envs::kTerminated);
  EXPECT_EQ(slots.count(means, {false}).episodes, 1);
  LearnerStats s;
  means.fill(s);
  EXPECT_DOUBLE_EQ(s.return_mean, 1.0);
  EXPECT_DOUBLE_EQ(s.shaped_return_mean, 11.0);
}

TEST(EpisodeReturns, MeansAreNaNBeforeTheFirstEpisodeAndCoverTheLast100) {
  EpisodeMeans means;
  LearnerStats s;
  means.fill(s);
  EXPECT_TRUE(std::isnan(s.return_mean));
  EXPECT_TRUE(std::isnan(s.shaped_return_mean));
  EXPECT_TRUE(std::isnan(s.eval_return_mean));
  Slots slots(1);
  // 150 one-step episodes: the first 50 pay 100, the last 100 pay 1.
  for (int e = 0; e < 150; ++e) {
    slots.step(0, 0.f, envs::kFirst);
    slots.step(0, e < 50 ? 100.f : 1.f, envs::kTerminated);
    slots.count(means, {false});
  }
  means.fill(s);
  EXPECT_DOUBLE_EQ(s.return_mean, 1.0);
  EXPECT_DOUBLE_EQ(s.shaped_return_mean, 11.0);
}

}  // namespace
}  // namespace moonseed::engine
