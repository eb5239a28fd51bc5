#include "envs/classic/mountain_car.h"

#include <gtest/gtest.h>

#include <cmath>

#include "tests/envs/env_test_util.h"

namespace moonseed::envs {
namespace {

using testing::physics_of;
using testing::reset_env;
using testing::set_physics;
using testing::step_discrete;

TEST(MountainCar, SpecMatchesGymnasium) {
  MountainCar env;
  const EnvSpec& spec = env.spec();
  EXPECT_EQ(spec.id, "MountainCar-v0");
  EXPECT_EQ(spec.max_episode_steps, 200);
  EXPECT_EQ(spec.action.kind, SpaceKind::kDiscrete);
  EXPECT_EQ(spec.action.n, 3);
  EXPECT_EQ(spec.observation.shape, std::vector<int64_t>{2});
  EXPECT_EQ(spec.observation.low, (std::vector<float>{-1.2f, -0.07f}));
  EXPECT_EQ(spec.observation.high, (std::vector<float>{0.6f, 0.07f}));
}

// python3 -c "import numpy as np;
//   print('%.9g' % np.float32(np.random.default_rng(5).uniform(-0.6, -0.4)))"
TEST(MountainCar, ResetWithSeedGivesGymnasiumInitialState) {
  MountainCar env;
  EXPECT_EQ(reset_env(env, 5), (std::vector<float>{-0.438999414f, 0.f}));
}

TEST(MountainCar, OneStepFollowsTheGymnasiumEquations) {
  MountainCar env;
  for (int32_t action = 0; action < 3; ++action) {
    double position = -0.5, velocity = 0.01;
    set_physics(env, {position, velocity});
    const auto out = step_discrete(env, action);

    const double force = 0.001, gravity = 0.0025;
    velocity += (action - 1) * force + std::cos(3 * position) * (-gravity);
    velocity = std::min(std::max(velocity, -0.07), 0.07);  // within bounds here
    position += velocity;

    EXPECT_EQ(physics_of(env, 2), (std::vector<double>{position, velocity}));
    EXPECT_EQ(out.obs, (std::vector<float>{static_cast<float>(position),
                                           static_cast<float>(velocity)}));
    EXPECT_EQ(out.result.reward, -1.f);
    EXPECT_FALSE(out.result.terminated);
  }
}

TEST(MountainCar, VelocityIsClippedToMaxSpeed) {
  MountainCar env;
  set_physics(env, {-0.5, 0.0699});
  step_discrete(env, 2);
  EXPECT_EQ(physics_of(env, 2)[1], 0.07);
}

TEST(MountainCar, LeftWallStopsTheCar) {
  MountainCar env;
  set_physics(env, {-1.19, -0.05});
  const auto out = step_discrete(env, 0);
  EXPECT_EQ(physics_of(env, 2), (std::vector<double>{-1.2, 0.0}));
  EXPECT_EQ(out.obs, (std::vector<float>{-1.2f, 0.f}));
}

TEST(MountainCar, TerminatesAtPositionHalfWithNonNegativeVelocity) {
  MountainCar env;
  // 0.49 + (0.02 + 0.001 + cos(1.47) * -0.0025) = 0.5107... >= 0.5
  set_physics(env, {0.49, 0.02});
  const auto out = step_discrete(env, 2);
  EXPECT_GE(physics_of(env, 2)[0], 0.5);
  EXPECT_TRUE(out.result.terminated);
  EXPECT_EQ(out.result.reward, -1.f);
  // One step short of the goal does not terminate.
  set_physics(env, {0.47, 0.02});
  EXPECT_FALSE(step_discrete(env, 2).result.terminated);
}

TEST(MountainCar, DoesNotTerminateBeyondTheGoalWhileRollingBack) {
  MountainCar env;
  set_physics(env, {0.58, -0.01});
  const auto out = step_discrete(env, 0);
  EXPECT_GE(physics_of(env, 2)[0], 0.5);
  EXPECT_LT(physics_of(env, 2)[1], 0.0);
  EXPECT_FALSE(out.result.terminated);
}

TEST(MountainCar, GoalVelocityOptionRaisesTheBar) {
  MountainCar env(200, /*goal_velocity=*/0.05);
  set_physics(env, {0.49, 0.02});
  EXPECT_FALSE(step_discrete(env, 2).result.terminated);  // velocity ~0.021 < 0.05
}

TEST(MountainCar, TruncatesAtStep200AndNotBefore) {
  MountainCar env;
  reset_env(env, 0);
  for (int t = 1; t <= 200; ++t) {
    const auto out = step_discrete(env, 1);  // coasting never reaches the flag
    ASSERT_FALSE(out.result.terminated) << "step " << t;
    ASSERT_EQ(out.result.truncated, t == 200) << "step " << t;
  }
}

}  // namespace
}  // namespace moonseed::envs
