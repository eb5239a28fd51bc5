#include "envs/classic/acrobot.h"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <random>

#include "envs/classic/numpy_scalar.h"
#include "tests/envs/env_test_util.h"

namespace moonseed::envs {
namespace {

using testing::physics_of;
using testing::reset_env;
using testing::set_physics;
using testing::step_discrete;

constexpr double kPi = 3.141592653589793;

TEST(Acrobot, SpecMatchesGymnasium) {
  Acrobot env;
  const EnvSpec& spec = env.spec();
  EXPECT_EQ(spec.id, "Acrobot-v1");
  EXPECT_EQ(spec.max_episode_steps, 500);
  EXPECT_EQ(spec.action.kind, SpaceKind::kDiscrete);
  EXPECT_EQ(spec.action.n, 3);
  EXPECT_EQ(spec.observation.shape, std::vector<int64_t>{6});
  EXPECT_EQ(spec.observation.dtype, DType::kFloat32);
  const float v1 = static_cast<float>(4 * kPi), v2 = static_cast<float>(9 * kPi);
  EXPECT_EQ(spec.observation.high, (std::vector<float>{1, 1, 1, 1, v1, v2}));
  EXPECT_EQ(spec.observation.low, (std::vector<float>{-1, -1, -1, -1, -v1, -v2}));
}

// python3 -c "import numpy as np; s = np.random.default_rng(42).uniform(-0.1, 0.1, 4)
//   .astype(np.float32); print(['%.9g' % v for v in np.array([np.cos(s[0]), np.sin(s[0]),
//   np.cos(s[1]), np.sin(s[1]), s[2], s[3]], dtype=np.float32)])"
TEST(Acrobot, ResetWithSeedGivesGymnasiumInitialObservation) {
  Acrobot env;
  EXPECT_EQ(reset_env(env, 42), (std::vector<float>{0.998499334f, 0.0547637977f, 0.999925256f,
                                                    -0.0122240074f, 0.0717195868f,
                                                    0.0394736044f}));
}

TEST(Acrobot, ResetStateIsRoundedToFloat32) {
  Acrobot env;
  reset_env(env, 42);
  for (double value : physics_of(env, 4)) {
    EXPECT_EQ(value, static_cast<double>(static_cast<float>(value)));
  }
}

// Gymnasium's _dsdt ("book" dynamics), written out in the order Python evaluates it;
// `**` is libm pow there, hence py_pow.
std::array<double, 5> acrobot_dsdt(const std::array<double, 5>& s) {
  const double m1 = 1.0, m2 = 1.0, l1 = 1.0, lc1 = 0.5, lc2 = 0.5, I1 = 1.0, I2 = 1.0, g = 9.8;
  const double a = s[4];
  const double theta1 = s[0], theta2 = s[1], dtheta1 = s[2], dtheta2 = s[3];
  const double d1 = m1 * py_pow(lc1, 2) +
                    m2 * (py_pow(l1, 2) + py_pow(lc2, 2) + 2 * l1 * lc2 * std::cos(theta2)) + I1 +
                    I2;
  const double d2 = m2 * (py_pow(lc2, 2) + l1 * lc2 * std::cos(theta2)) + I2;
  const double phi2 = m2 * lc2 * g * std::cos(theta1 + theta2 - kPi / 2.0);
  double phi1 = -m2 * l1 * lc2 * py_pow(dtheta2, 2) * std::sin(theta2);
  phi1 = phi1 - 2 * m2 * l1 * lc2 * dtheta2 * dtheta1 * std::sin(theta2);
  phi1 = phi1 + (m1 * lc1 + m2 * l1) * g * std::cos(theta1 - kPi / 2);
  phi1 = phi1 + phi2;
  double numerator = a + d2 / d1 * phi1;
  numerator = numerator - m2 * l1 * lc2 * py_pow(dtheta1, 2) * std::sin(theta2);
  numerator = numerator - phi2;
  const double ddtheta2 = numerator / (m2 * py_pow(lc2, 2) + I2 - py_pow(d2, 2) / d1);
  const double ddtheta1 = -(d2 * ddtheta2 + phi1) / d1;
  return {dtheta1, dtheta2, ddtheta1, ddtheta2, 0.0};
}

TEST(Acrobot, OneStepIsOneRungeKuttaStepOfTheBookDynamics) {
  Acrobot env;
  const std::array<double, 5> y0 = {0.1, -0.2, 0.3, -0.4, 1.0};  // action 2 = torque +1
  set_physics(env, {y0[0], y0[1], y0[2], y0[3]});
  const auto out = step_discrete(env, 2);

  // rk4(derivs, y0, [0, 0.2]) with NumPy's element-wise array arithmetic.
  const double dt = 0.2 - 0, dt2 = dt / 2.0;
  const auto k1 = acrobot_dsdt(y0);
  std::array<double, 5> y;
  for (int i = 0; i < 5; ++i) y[i] = y0[i] + dt2 * k1[i];
  const auto k2 = acrobot_dsdt(y);
  for (int i = 0; i < 5; ++i) y[i] = y0[i] + dt2 * k2[i];
  const auto k3 = acrobot_dsdt(y);
  for (int i = 0; i < 5; ++i) y[i] = y0[i] + dt * k3[i];
  const auto k4 = acrobot_dsdt(y);
  std::array<double, 4> next;
  for (int i = 0; i < 4; ++i) next[i] = y0[i] + dt / 6.0 * (k1[i] + 2 * k2[i] + 2 * k3[i] + k4[i]);
  // Small angles and speeds: wrap and bound leave them alone.
  ASSERT_LT(std::abs(next[0]), kPi);
  ASSERT_LT(std::abs(next[1]), kPi);

  EXPECT_EQ(physics_of(env, 4), std::vector<double>(next.begin(), next.end()));
  EXPECT_EQ(out.obs, (std::vector<float>{static_cast<float>(std::cos(next[0])),
                                         static_cast<float>(std::sin(next[0])),
                                         static_cast<float>(std::cos(next[1])),
                                         static_cast<float>(std::sin(next[1])),
                                         static_cast<float>(next[2]), static_cast<float>(next[3])}));
  EXPECT_EQ(out.result.reward, -1.f);
  EXPECT_FALSE(out.result.terminated);
}

TEST(Acrobot, AnglesWrapIntoMinusPiPi) {
  Acrobot env;
  // Spinning fast past pi: the new angle comes back in [-pi, pi].
  set_physics(env, {3.1, -3.1, 5.0, -5.0});
  step_discrete(env, 1);
  const auto s = physics_of(env, 4);
  EXPECT_LE(std::abs(s[0]), kPi);
  EXPECT_LE(std::abs(s[1]), kPi);
}

TEST(Acrobot, VelocitiesAreBoundedToFourPiAndNinePi) {
  Acrobot env;
  set_physics(env, {0, 0, 4 * kPi, 9 * kPi});
  step_discrete(env, 2);
  auto s = physics_of(env, 4);
  EXPECT_LE(std::abs(s[2]), 4 * kPi);
  EXPECT_LE(std::abs(s[3]), 9 * kPi);
  set_physics(env, {0, 0, 1000.0, -1000.0});
  step_discrete(env, 0);
  s = physics_of(env, 4);
  EXPECT_TRUE(std::abs(s[2]) == 4 * kPi || std::abs(s[3]) == 9 * kPi);
}

TEST(Acrobot, TerminatesExactlyWhenTheTipIsAboveTheBar) {
  Acrobot env;
  reset_env(env, 3);
  std::mt19937 random(3);
  int terminations = 0;
  for (int t = 0; t < 20000 && terminations < 20; ++t) {
    // Pumping with the second joint's velocity swings the tip up within a few hundred steps.
    const std::vector<double> before = physics_of(env, 4);
    const int32_t action = random() % 4 == 0 ? static_cast<int32_t>(random() % 3)
                                             : (before[3] > 0 ? 2 : 0);
    const auto out = step_discrete(env, action);
    const auto s = physics_of(env, 4);
    const bool above = -std::cos(s[0]) - std::cos(s[1] + s[0]) > 1.0;
    ASSERT_EQ(out.result.terminated, above) << "step " << t;
    ASSERT_EQ(out.result.reward, above ? 0.f : -1.f);
    if (out.result.terminated || out.result.truncated) {
      terminations += out.result.terminated;
      reset_env(env, std::nullopt);
    }
  }
  EXPECT_EQ(terminations, 20);
}

TEST(Acrobot, UpsideDownAtRestTerminatesWithRewardZero) {
  Acrobot env;
  set_physics(env, {kPi, 0, 0, 0});
  const auto out = step_discrete(env, 1);
  EXPECT_TRUE(out.result.terminated);
  EXPECT_EQ(out.result.reward, 0.f);
}

TEST(Acrobot, TruncatesAtStep500AndNotBefore) {
  Acrobot env;
  reset_env(env, 0);
  for (int t = 1; t <= 500; ++t) {
    const auto out = step_discrete(env, 1);  // no torque: it never swings up
    ASSERT_FALSE(out.result.terminated) << "step " << t;
    ASSERT_EQ(out.result.truncated, t == 500) << "step " << t;
  }
}

}  // namespace
}  // namespace moonseed::envs
