#include "envs/spec.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace moonseed::envs {
namespace {

Space box(std::vector<int64_t> shape, DType dtype = DType::kFloat32) {
  Space space;
  space.kind = SpaceKind::kBox;
  space.dtype = dtype;
  space.shape = std::move(shape);
  return space;
}

Space discrete(int64_t n) {
  Space space;
  space.kind = SpaceKind::kDiscrete;
  space.n = n;
  return space;
}

TEST(Space, DiscreteHasOneElementSentAsAnInt32) {
  EXPECT_EQ(discrete(7).numel(), 1);
  EXPECT_EQ(discrete(7).byte_size(), 4);
}

TEST(Space, BoxCountsTheProductOfItsShape) {
  EXPECT_EQ(box({84, 84, 4}).numel(), 84 * 84 * 4);
  EXPECT_EQ(box({}).numel(), 1);  // a scalar box
  EXPECT_EQ(box({3, 0}).numel(), 0);
}

TEST(Space, BoxByteSizeDependsOnDtype) {
  EXPECT_EQ(box({4}).byte_size(), 16);
  EXPECT_EQ(box({84, 84, 4}, DType::kUInt8).byte_size(), 84 * 84 * 4);
}

TEST(Space, NegativeDimensionIsRejectedWithItsValue) {
  try {
    box({2, -3}).numel();
    FAIL() << "expected invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("-3"), std::string::npos) << e.what();
  }
}

TEST(Space, EqualityComparesEveryField) {
  Space a = box({2});
  a.low = {-1.f, -2.f};
  a.high = {1.f, 2.f};
  Space b = a;
  EXPECT_EQ(a, b);
  b.high[1] = 3.f;
  EXPECT_NE(a, b);
  b = a;
  b.dtype = DType::kUInt8;
  EXPECT_NE(a, b);
  b = a;
  b.shape = {1, 2};
  EXPECT_NE(a, b);
  EXPECT_NE(discrete(2), discrete(3));
  EXPECT_NE(discrete(2), box({2}));
}

TEST(EnvSpec, EqualityIncludesIdAndTimeLimit) {
  EnvSpec a;
  a.id = "CartPole-v1";
  a.observation = box({4});
  a.action = discrete(2);
  a.max_episode_steps = 500;
  EnvSpec b = a;
  EXPECT_EQ(a, b);
  b.max_episode_steps = 200;
  EXPECT_NE(a, b);
  b = a;
  b.id = "CartPole-v0";
  EXPECT_NE(a, b);
  b = a;
  b.action = discrete(3);
  EXPECT_NE(a, b);
}

TEST(EnvSpec, DescribeNamesIdSpacesAndTimeLimit) {
  EnvSpec spec;
  spec.id = "CartPole-v1";
  spec.observation = box({4});
  spec.action = discrete(2);
  EXPECT_EQ(spec.describe(), "CartPole-v1 obs=box f32[4] act=discrete(2)");
  spec.max_episode_steps = 500;
  EXPECT_EQ(spec.describe(), "CartPole-v1 obs=box f32[4] act=discrete(2) max_episode_steps=500");
  spec.observation = box({84, 84, 4}, DType::kUInt8);
  spec.action = box({1});
  spec.max_episode_steps = 0;
  EXPECT_EQ(spec.describe(), "CartPole-v1 obs=box u8[84,84,4] act=box f32[1]");
}

}  // namespace
}  // namespace moonseed::envs
