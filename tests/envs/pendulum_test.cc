#include "envs/classic/pendulum.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "envs/classic/numpy_scalar.h"
#include "tests/envs/env_test_util.h"

namespace moonseed::envs {
namespace {

using testing::physics_of;
using testing::reset_env;
using testing::set_physics;
using testing::step_box;

constexpr double kPi = 3.141592653589793;

TEST(Pendulum, SpecMatchesGymnasium) {
  Pendulum env;
  const EnvSpec& spec = env.spec();
  EXPECT_EQ(spec.id, "Pendulum-v1");
  EXPECT_EQ(spec.max_episode_steps, 200);
  EXPECT_EQ(spec.action.kind, SpaceKind::kBox);
  EXPECT_EQ(spec.action.shape, std::vector<int64_t>{1});
  EXPECT_EQ(spec.action.low, std::vector<float>{-2.f});
  EXPECT_EQ(spec.action.high, std::vector<float>{2.f});
  EXPECT_EQ(spec.observation.shape, std::vector<int64_t>{3});
  EXPECT_EQ(spec.observation.low, (std::vector<float>{-1.f, -1.f, -8.f}));
  EXPECT_EQ(spec.observation.high, (std::vector<float>{1.f, 1.f, 8.f}));
}

// python3 -c "import numpy as np; th, thdot = np.random.default_rng(7).uniform(
//   low=-np.array([np.pi, 1.0]), high=np.array([np.pi, 1.0])); print(['%.9g' % v for v in
//   np.array([np.cos(th), np.sin(th), thdot], dtype=np.float32)])"
TEST(Pendulum, ResetWithSeedGivesGymnasiumInitialObservation) {
  Pendulum env;
  EXPECT_EQ(reset_env(env, 7), (std::vector<float>{0.706682503f, 0.707530797f, 0.794427574f}));
}

TEST(Pendulum, ResetDrawsAngleInPlusMinusPiAndSpeedInPlusMinusOne) {
  Pendulum env;
  double min_th = 0, max_th = 0;
  for (uint64_t seed = 0; seed < 300; ++seed) {
    reset_env(env, seed);
    const auto s = physics_of(env, 2);
    ASSERT_LE(std::abs(s[0]), kPi);
    ASSERT_LE(std::abs(s[1]), 1.0);
    min_th = std::min(min_th, s[0]);
    max_th = std::max(max_th, s[0]);
  }
  EXPECT_LT(min_th, -2.5);  // the whole circle is used, not a small window
  EXPECT_GT(max_th, 2.5);
}

// ((x + pi) % (2 pi)) - pi with Python's modulo (result has the divisor's sign).
double angle_normalize(double x) {
  double mod = std::fmod(x + kPi, 2 * kPi);
  if (mod < 0) mod += 2 * kPi;
  return mod - kPi;
}

// Gymnasium's step under NumPy 2: u stays np.float32, so 3.0 * u and 0.001 * u**2 are
// float32 products; everything else is float64.
struct PendulumStep {
  double th, thdot, reward;
};
PendulumStep expected_step(double th, double thdot, float action, double g) {
  const float u = std::min(std::max(action, -2.f), 2.f);
  const double costs = py_pow(angle_normalize(th), 2) + 0.1 * py_pow(thdot, 2) +
                       static_cast<double>(0.001f * py_powf(u, 2.f));
  const float torque_term = 3.f * u;  // 3.0 / (m * l**2) = 3.0
  double newthdot = thdot + (3 * g / (2 * 1.0) * std::sin(th) + double{torque_term}) * 0.05;
  newthdot = std::min(std::max(newthdot, -8.0), 8.0);
  const double newth = th + newthdot * 0.05;
  return {newth, newthdot, -costs};
}

TEST(Pendulum, OneStepFollowsTheGymnasiumEquations) {
  Pendulum env;
  const double th = 1.0, thdot = 0.5;
  const float action = 1.3f;
  set_physics(env, {th, thdot});
  const auto out = step_box(env, action);
  const PendulumStep want = expected_step(th, thdot, action, 10.0);
  EXPECT_EQ(physics_of(env, 2), (std::vector<double>{want.th, want.thdot}));
  EXPECT_EQ(out.obs, (std::vector<float>{static_cast<float>(std::cos(want.th)),
                                         static_cast<float>(std::sin(want.th)),
                                         static_cast<float>(want.thdot)}));
  EXPECT_EQ(out.result.reward, static_cast<float>(want.reward));
  EXPECT_FALSE(out.result.terminated);
}

TEST(Pendulum, TorqueIsClippedToTwo) {
  Pendulum a, b;
  set_physics(a, {-2.0, 0.25});
  set_physics(b, {-2.0, 0.25});
  EXPECT_EQ(step_box(a, 5.f).obs, step_box(b, 2.f).obs);
  const PendulumStep want = expected_step(-2.0, 0.25, 5.f, 10.0);
  EXPECT_EQ(physics_of(a, 2), (std::vector<double>{want.th, want.thdot}));
}

TEST(Pendulum, RewardNormalizesTheAngleBeforeSquaringIt) {
  Pendulum env;
  // 2 pi + 0.1 is 0.1 away from upright: cost 0.01 + 0, not (6.38)^2.
  set_physics(env, {2 * kPi + 0.1, 0.0});
  const auto out = step_box(env, 0.f);
  EXPECT_NEAR(out.result.reward, -0.01, 1e-9);
  EXPECT_EQ(out.result.reward, static_cast<float>(expected_step(2 * kPi + 0.1, 0, 0.f, 10).reward));
}

TEST(Pendulum, SpeedIsClippedToEight) {
  Pendulum env;
  set_physics(env, {kPi / 2, 7.99});
  step_box(env, 2.f);
  EXPECT_EQ(physics_of(env, 2)[1], 8.0);
}

TEST(Pendulum, GravityOptionChangesTheDynamics) {
  Pendulum env(200, /*g=*/9.81);
  set_physics(env, {1.0, 0.5});
  step_box(env, 1.3f);
  const PendulumStep want = expected_step(1.0, 0.5, 1.3f, 9.81);
  EXPECT_EQ(physics_of(env, 2), (std::vector<double>{want.th, want.thdot}));
  EXPECT_NE(want.thdot, expected_step(1.0, 0.5, 1.3f, 10.0).thdot);
}

TEST(Pendulum, NeverTerminates) {
  Pendulum env(/*max_episode_steps=*/0);
  reset_env(env, 1);
  std::mt19937 random(1);
  std::uniform_real_distribution<float> torque(-3.f, 3.f);
  for (int t = 0; t < 10000; ++t) {
    const auto out = step_box(env, torque(random));
    ASSERT_FALSE(out.result.terminated) << "step " << t;
    ASSERT_FALSE(out.result.truncated) << "step " << t;
  }
}

TEST(Pendulum, TruncatesAtStep200AndNotBefore) {
  Pendulum env;
  reset_env(env, 0);
  for (int t = 1; t <= 200; ++t) {
    const auto out = step_box(env, 0.5f);
    ASSERT_EQ(out.result.truncated, t == 200) << "step " << t;
  }
}

}  // namespace
}  // namespace moonseed::envs
