#include "envs/classic/mountain_car_continuous.h"

#include <gtest/gtest.h>

#include <cmath>

#include "envs/classic/numpy_scalar.h"
#include "tests/envs/env_test_util.h"

namespace moonseed::envs {
namespace {

using testing::physics_of;
using testing::reset_env;
using testing::set_physics;
using testing::step_box;

// Puts the env in a state one step into an episode, where Gymnasium holds float32 values.
void set_float32_physics(Env& env, float position, float velocity) {
  reset_env(env, 0);
  step_box(env, 0.f);
  std::vector<double> state = env.get_state();
  state[0] = position;
  state[1] = velocity;
  env.set_state(state);
}

TEST(MountainCarContinuous, SpecMatchesGymnasium) {
  MountainCarContinuous env;
  const EnvSpec& spec = env.spec();
  EXPECT_EQ(spec.id, "MountainCarContinuous-v0");
  EXPECT_EQ(spec.max_episode_steps, 999);
  EXPECT_EQ(spec.action.kind, SpaceKind::kBox);
  EXPECT_EQ(spec.action.shape, std::vector<int64_t>{1});
  EXPECT_EQ(spec.action.low, std::vector<float>{-1.f});
  EXPECT_EQ(spec.action.high, std::vector<float>{1.f});
  EXPECT_EQ(spec.observation.shape, std::vector<int64_t>{2});
  EXPECT_EQ(spec.observation.low, (std::vector<float>{-1.2f, -0.07f}));
  EXPECT_EQ(spec.observation.high, (std::vector<float>{0.6f, 0.07f}));
}

// python3 -c "import numpy as np;
//   print('%.9g' % np.float32(np.random.default_rng(11).uniform(-0.6, -0.4)))"
TEST(MountainCarContinuous, ResetWithSeedGivesGymnasiumInitialState) {
  MountainCarContinuous env;
  EXPECT_EQ(reset_env(env, 11), (std::vector<float>{-0.574285984f, 0.f}));
}

TEST(MountainCarContinuous, FirstStepUsesTheFloat64ResetState) {
  MountainCarContinuous env;
  const double position = -0.5234567890123;
  set_physics(env, {position, 0.0});
  const float action = 0.75f;
  const auto out = step_box(env, action);

  // Gymnasium under NumPy 2: force is np.float32, so force * 0.0015 and the subtraction
  // run in float32; the float64 state promotes the sum back to float64.
  const float force_term = action * static_cast<float>(0.0015);
  const double gravity_term = 0.0025 * std::cos(3 * position);
  const float increment = force_term - static_cast<float>(gravity_term);
  const double velocity = 0.0 + static_cast<double>(increment);
  const double new_position = position + velocity;
  const std::vector<float> stored{static_cast<float>(new_position), static_cast<float>(velocity)};

  EXPECT_EQ(out.obs, stored);
  EXPECT_EQ(physics_of(env, 2), (std::vector<double>{stored[0], stored[1]}));
  EXPECT_EQ(out.result.reward, static_cast<float>(0.0 - py_pow(action, 2) * 0.1));
  EXPECT_FALSE(out.result.terminated);
}

TEST(MountainCarContinuous, LaterStepsRunInFloat32) {
  MountainCarContinuous env;
  const float position = -0.4321f, velocity = 0.0123f, action = -0.3f;
  set_float32_physics(env, position, velocity);
  const auto out = step_box(env, action);

  const float force_term = action * static_cast<float>(0.0015);
  const float three_x = 3.f * position;  // a Python int times np.float32 stays float32
  const double gravity_term = 0.0025 * std::cos(static_cast<double>(three_x));  // math.cos
  const float increment = force_term - static_cast<float>(gravity_term);
  const float new_velocity = velocity + increment;
  const float new_position = position + new_velocity;

  EXPECT_EQ(out.obs, (std::vector<float>{new_position, new_velocity}));
  EXPECT_EQ(out.result.reward, static_cast<float>(0.0 - py_pow(action, 2) * 0.1));
}

TEST(MountainCarContinuous, SaturatedForceIsAPythonFloatAndRewardUsesTheRawAction) {
  MountainCarContinuous env;
  const float position = -0.4321f, velocity = 0.0123f, action = 1.7f;
  set_float32_physics(env, position, velocity);
  const auto out = step_box(env, action);

  // min(max(1.7, -1.0), 1.0) is the Python float 1.0: the increment stays in double and is
  // cast to float32 only when added to the float32 velocity.
  const double force_term = 1.0 * 0.0015;
  const float three_x = 3.f * position;
  const double increment = force_term - 0.0025 * std::cos(static_cast<double>(three_x));
  const float new_velocity = velocity + static_cast<float>(increment);
  const float new_position = position + new_velocity;

  EXPECT_EQ(out.obs, (std::vector<float>{new_position, new_velocity}));
  EXPECT_EQ(out.result.reward, static_cast<float>(0.0 - py_pow(1.7f, 2) * 0.1));
}

TEST(MountainCarContinuous, VelocityIsClippedToMaxSpeed) {
  MountainCarContinuous env;
  set_float32_physics(env, -0.5f, 0.0699f);
  const auto out = step_box(env, 1.f);
  EXPECT_EQ(out.obs[1], 0.07f);
}

TEST(MountainCarContinuous, LeftWallStopsTheCar) {
  MountainCarContinuous env;
  set_float32_physics(env, -1.19f, -0.05f);
  const auto out = step_box(env, -1.f);
  EXPECT_EQ(out.obs, (std::vector<float>{-1.2f, 0.f}));
}

TEST(MountainCarContinuous, ReachingTheFlagTerminatesWithRewardHundredMinusActionCost) {
  MountainCarContinuous env;
  set_float32_physics(env, 0.44f, 0.02f);
  const float action = 0.5f;
  const auto out = step_box(env, action);
  EXPECT_GE(out.obs[0], 0.45f);
  EXPECT_TRUE(out.result.terminated);
  EXPECT_EQ(out.result.reward, static_cast<float>(100.0 - py_pow(action, 2) * 0.1));
  // Short of 0.45 nothing ends.
  set_float32_physics(env, 0.40f, 0.02f);
  const auto before = step_box(env, action);
  EXPECT_LT(before.obs[0], 0.45f);
  EXPECT_FALSE(before.result.terminated);
}

TEST(MountainCarContinuous, GoalVelocityOptionRaisesTheBar) {
  MountainCarContinuous env(999, /*goal_velocity=*/0.05);
  set_float32_physics(env, 0.44f, 0.02f);
  EXPECT_FALSE(step_box(env, 0.5f).result.terminated);
}

TEST(MountainCarContinuous, TruncatesAtStep999AndNotBefore) {
  MountainCarContinuous env;
  reset_env(env, 0);
  for (int t = 1; t <= 999; ++t) {
    const auto out = step_box(env, 0.f);
    ASSERT_FALSE(out.result.terminated) << "step " << t;
    ASSERT_EQ(out.result.truncated, t == 999) << "step " << t;
  }
}

}  // namespace
}  // namespace moonseed::envs
