#include "engine/learner/prefetcher.h"

#include <cstring>
#include <stdexcept>
#include <vector>

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace moonseed::engine {
namespace {

constexpr int64_t kT = 3;

UnrollShape shape_of(envs::SpaceKind action_kind, int64_t action_dim, envs::DType obs_dtype) {
  UnrollShape shape;
  shape.unroll_length = kT;
  shape.observation_shape = {2};
  shape.observation_dtype = obs_dtype;
  shape.action_kind = action_kind;
  shape.action_dim = action_dim;
  return shape;
}

// Unroll b holds recognisable values at step t: observation {b, t},
// reward 10b + t, logp -(b + t), version 100b + t, action 1000b + t
// (each box action element k: 1000b + t + k/10).
UnrollPtr make_unroll(UnrollPool& pool, int b) {
  const UnrollShape& shape = pool.shape();
  const bool uint8_obs = shape.observation_dtype == envs::DType::kUInt8;
  UnrollPtr u = pool.acquire();
  u->slot = b;
  for (int64_t t = 0; t <= kT; ++t) {
    if (uint8_obs) {
      u->observations[t * 2] = static_cast<uint8_t>(b);
      u->observations[t * 2 + 1] = static_cast<uint8_t>(t);
    } else {
      const float o[2] = {static_cast<float>(b), static_cast<float>(t)};
      std::memcpy(u->observations.data() + t * sizeof o, o, sizeof o);
    }
    if (shape.action_kind == envs::SpaceKind::kDiscrete) {
      const int64_t a = 1000 * b + t;
      std::memcpy(u->actions.data() + t * sizeof a, &a, sizeof a);
    } else {
      for (int64_t k = 0; k < shape.action_dim; ++k) {
        const float a = 1000.f * b + t + k / 10.f;
        std::memcpy(u->actions.data() + (t * shape.action_dim + k) * sizeof a, &a, sizeof a);
      }
    }
    u->rewards[t] = 10.f * b + t;
    u->behaviour_logp[t] = -static_cast<float>(b + t);
    u->policy_version[t] = 100 * b + t;
    u->terminated[t] = (b == 1 && t == 1) ? 1 : 0;
    u->truncated[t] = (b == 0 && t == 2) ? 1 : 0;
    u->valid[t] = (b == 1 && t == 2) ? 0 : 1;
  }
  return u;
}

std::vector<UnrollPtr> make_unrolls(UnrollPool& pool, int n) {
  std::vector<UnrollPtr> out;
  for (int b = 0; b < n; ++b) out.push_back(make_unroll(pool, b));
  return out;
}

TEST(CollateUnrolls, StacksDiscreteUnrollsTimeMajor) {
  auto pool = UnrollPool::create(shape_of(envs::SpaceKind::kDiscrete, 1, envs::DType::kFloat32));
  UnrollBatch batch = collate_unrolls(make_unrolls(*pool, 2), pool->shape(), false);

  EXPECT_EQ(batch.observations.sizes(), (std::vector<int64_t>{kT + 1, 2, 2}));
  EXPECT_EQ(batch.observations.scalar_type(), torch::kFloat32);
  EXPECT_EQ(batch.actions.sizes(), (std::vector<int64_t>{kT + 1, 2}));
  EXPECT_EQ(batch.actions.scalar_type(), torch::kInt64);
  EXPECT_EQ(batch.policy_version.scalar_type(), torch::kInt64);
  EXPECT_EQ(batch.T(), kT);
  EXPECT_EQ(batch.B(), 2);
  for (int64_t t = 0; t <= kT; ++t) {
    for (int64_t b = 0; b < 2; ++b) {
      EXPECT_EQ(batch.observations[t][b][0].item<float>(), static_cast<float>(b));
      EXPECT_EQ(batch.observations[t][b][1].item<float>(), static_cast<float>(t));
      EXPECT_EQ(batch.actions[t][b].item<int64_t>(), 1000 * b + t);
      EXPECT_EQ(batch.rewards[t][b].item<float>(), 10.f * b + t);
      EXPECT_EQ(batch.behaviour_logp[t][b].item<float>(), -static_cast<float>(b + t));
      EXPECT_EQ(batch.policy_version[t][b].item<int64_t>(), 100 * b + t);
    }
  }
  EXPECT_EQ(batch.terminated[1][1].item<float>(), 1.f);
  EXPECT_EQ(batch.terminated.sum().item<float>(), 1.f);
  EXPECT_EQ(batch.truncated[2][0].item<float>(), 1.f);
  EXPECT_EQ(batch.truncated.sum().item<float>(), 1.f);
  EXPECT_EQ(batch.valid[2][1].item<float>(), 0.f);
  EXPECT_EQ(batch.valid.sum().item<float>(), 2.f * (kT + 1) - 1.f);
}

TEST(CollateUnrolls, StacksBoxActionsAsFloatTimeBatchAction) {
  auto pool = UnrollPool::create(shape_of(envs::SpaceKind::kBox, 3, envs::DType::kFloat32));
  UnrollBatch batch = collate_unrolls(make_unrolls(*pool, 2), pool->shape(), false);
  EXPECT_EQ(batch.actions.sizes(), (std::vector<int64_t>{kT + 1, 2, 3}));
  EXPECT_EQ(batch.actions.scalar_type(), torch::kFloat32);
  for (int64_t t = 0; t <= kT; ++t) {
    for (int64_t b = 0; b < 2; ++b) {
      for (int64_t k = 0; k < 3; ++k) {
        EXPECT_FLOAT_EQ(batch.actions[t][b][k].item<float>(), 1000.f * b + t + k / 10.f);
      }
    }
  }
}

TEST(CollateUnrolls, KeepsUint8ObservationsAsUint8) {
  auto pool = UnrollPool::create(shape_of(envs::SpaceKind::kDiscrete, 1, envs::DType::kUInt8));
  UnrollBatch batch = collate_unrolls(make_unrolls(*pool, 3), pool->shape(), false);
  EXPECT_EQ(batch.observations.scalar_type(), torch::kUInt8);
  EXPECT_EQ(batch.observations.sizes(), (std::vector<int64_t>{kT + 1, 3, 2}));
  EXPECT_EQ(batch.observations[2][1][0].item<uint8_t>(), 1);
  EXPECT_EQ(batch.observations[2][1][1].item<uint8_t>(), 2);
}

TEST(CollateUnrolls, CountsFramesAsValidStepsBeforeTheLast) {
  auto pool = UnrollPool::create(shape_of(envs::SpaceKind::kDiscrete, 1, envs::DType::kFloat32));
  std::vector<UnrollPtr> unrolls = make_unrolls(*pool, 2);
  unrolls[0]->valid[kT] = 0;  // step T is never a frame, valid or not
  UnrollBatch batch = collate_unrolls(unrolls, pool->shape(), false);
  EXPECT_EQ(batch.frames, 2 * kT - 1);  // unroll 1 has one invalid step before T
}

TEST(CollateUnrolls, RejectsAnUnrollOfAnotherShape) {
  auto pool = UnrollPool::create(shape_of(envs::SpaceKind::kDiscrete, 1, envs::DType::kFloat32));
  UnrollShape longer = pool->shape();
  longer.unroll_length = kT + 1;
  EXPECT_THROW(collate_unrolls(make_unrolls(*pool, 1), longer, false), std::logic_error);
}

TEST(Prefetcher, PushesBatchesOfBUnrollsAndReturnsThemToThePool) {
  auto pool = UnrollPool::create(shape_of(envs::SpaceKind::kDiscrete, 1, envs::DType::kFloat32));
  BoundedQueue<UnrollPtr> unrolls(8);
  Prefetcher prefetcher(unrolls, pool->shape(), 2, torch::Device(torch::kCPU));
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(unrolls.push(make_unroll(*pool, i % 2)));

  for (int n = 0; n < 2; ++n) {
    std::optional<UnrollBatch> batch = prefetcher.next();
    ASSERT_TRUE(batch.has_value());
    EXPECT_EQ(batch->B(), 2);
    EXPECT_EQ(batch->T(), kT);
    EXPECT_EQ(batch->actions[1][1].item<int64_t>(), 1001);
  }
  unrolls.close();
  EXPECT_FALSE(prefetcher.next().has_value());  // the thread closed the batch queue
  EXPECT_EQ(pool->available(), pool->allocated());
  EXPECT_EQ(prefetcher.stats().batches, 2);
  EXPECT_EQ(prefetcher.stats().unrolls, 4);
}

TEST(Prefetcher, ClosingTheUnrollQueueDropsAPartialBatchAndEndsTheBatches) {
  auto pool = UnrollPool::create(shape_of(envs::SpaceKind::kDiscrete, 1, envs::DType::kFloat32));
  BoundedQueue<UnrollPtr> unrolls(8);
  Prefetcher prefetcher(unrolls, pool->shape(), 2, torch::Device(torch::kCPU));
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(unrolls.push(make_unroll(*pool, i % 2)));
  unrolls.close();
  ASSERT_TRUE(prefetcher.next().has_value());
  EXPECT_FALSE(prefetcher.next().has_value());
  EXPECT_EQ(prefetcher.stats().dropped_unrolls, 1);
  EXPECT_EQ(pool->available(), pool->allocated());
}

TEST(Prefetcher, HandsEveryUnrollToTheSinkOnceEvenThoseNeverTrainedOn) {
  auto pool = UnrollPool::create(shape_of(envs::SpaceKind::kDiscrete, 1, envs::DType::kFloat32));
  BoundedQueue<UnrollPtr> unrolls(16);
  std::vector<int> sunk;  // slots, in the order the sink saw them (the prefetch thread only)
  {
    Prefetcher prefetcher(unrolls, pool->shape(), 2, torch::Device(torch::kCPU), 1,
                          [&](UnrollPtr u) { sunk.push_back(u->slot); });
    // 2 full batches, then a partial one; the batch queue holds one batch, so
    // after next() takes the first, the second waits in it and the third
    // batch's unrolls stay behind.
    for (int i = 0; i < 7; ++i) ASSERT_TRUE(unrolls.push(make_unroll(*pool, i)));
    ASSERT_TRUE(prefetcher.next().has_value());
    prefetcher.stop();  // closes both queues: the rest is sunk, never trained on
  }
  EXPECT_EQ(sunk, (std::vector<int>{0, 1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(pool->available(), pool->allocated());
}

TEST(Prefetcher, StopEndsAThreadWaitingForUnrolls) {
  auto pool = UnrollPool::create(shape_of(envs::SpaceKind::kDiscrete, 1, envs::DType::kFloat32));
  BoundedQueue<UnrollPtr> unrolls(8);
  Prefetcher prefetcher(unrolls, pool->shape(), 4, torch::Device(torch::kCPU));
  ASSERT_TRUE(unrolls.push(make_unroll(*pool, 0)));
  prefetcher.stop();
  EXPECT_TRUE(unrolls.closed());
  EXPECT_FALSE(prefetcher.next().has_value());
}

TEST(Prefetcher, AMalformedUnrollStopsTheThreadAndNextRethrows) {
  auto pool = UnrollPool::create(shape_of(envs::SpaceKind::kDiscrete, 1, envs::DType::kFloat32));
  UnrollShape longer = pool->shape();
  longer.unroll_length = kT + 1;
  BoundedQueue<UnrollPtr> unrolls(8);
  Prefetcher prefetcher(unrolls, longer, 1, torch::Device(torch::kCPU));
  ASSERT_TRUE(unrolls.push(make_unroll(*pool, 0)));
  EXPECT_THROW(prefetcher.next(), std::logic_error);
  EXPECT_TRUE(unrolls.closed());
}

}  // namespace
}  // namespace moonseed::engine
