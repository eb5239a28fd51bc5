#include "envs/classic/cartpole.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "tests/envs/env_test_util.h"

namespace moonseed::envs {
namespace {

using testing::physics_of;
using testing::reset_env;
using testing::set_physics;
using testing::step_discrete;

constexpr double kTwelveDegrees = 12 * 2 * 3.141592653589793 / 360;

TEST(CartPole, SpecMatchesGymnasium) {
  CartPole env;
  const EnvSpec& spec = env.spec();
  EXPECT_EQ(spec.id, "CartPole-v1");
  EXPECT_EQ(spec.max_episode_steps, 500);
  EXPECT_EQ(spec.action.kind, SpaceKind::kDiscrete);
  EXPECT_EQ(spec.action.n, 2);
  EXPECT_EQ(spec.observation.kind, SpaceKind::kBox);
  EXPECT_EQ(spec.observation.dtype, DType::kFloat32);
  EXPECT_EQ(spec.observation.shape, std::vector<int64_t>{4});
  const float inf = std::numeric_limits<float>::infinity();
  const float angle = static_cast<float>(2 * kTwelveDegrees);
  EXPECT_EQ(spec.observation.high, (std::vector<float>{4.8f, inf, angle, inf}));
  EXPECT_EQ(spec.observation.low, (std::vector<float>{-4.8f, -inf, -angle, -inf}));
}

// python3 -c "import numpy as np; print(['%.9g' % v for v in
//   np.random.default_rng(123).uniform(-0.05, 0.05, 8).astype(np.float32)])"
TEST(CartPole, ResetWithSeedGivesGymnasiumInitialState) {
  CartPole env;
  EXPECT_EQ(reset_env(env, 123),
            (std::vector<float>{0.0182351861f, -0.0446178988f, -0.0279640127f, -0.0315628201f}));
  // Without a seed the next reset continues the same generator.
  EXPECT_EQ(reset_env(env, std::nullopt),
            (std::vector<float>{-0.0324094109f, 0.0312094502f, 0.0423345007f, -0.0223425608f}));
}

TEST(CartPole, SameSeedGivesSameInitialState) {
  CartPole a, b;
  EXPECT_EQ(reset_env(a, 77), reset_env(b, 77));
  EXPECT_NE(reset_env(a, 77), reset_env(b, 78));
}

TEST(CartPole, OneStepFollowsTheEulerEquations) {
  CartPole env;
  double x = 0.01, x_dot = -0.02, theta = 0.03, theta_dot = 0.04;
  set_physics(env, {x, x_dot, theta, theta_dot});
  const auto out = step_discrete(env, 1);

  // Gymnasium's step, written out in double in Gymnasium's order of operations.
  const double gravity = 9.8, masscart = 1.0, masspole = 0.1, length = 0.5, tau = 0.02;
  const double total_mass = masspole + masscart;
  const double polemass_length = masspole * length;
  const double force = 10.0;  // action 1 pushes right
  const double costheta = std::cos(theta);
  const double sintheta = std::sin(theta);
  const double temp = (force + polemass_length * (theta_dot * theta_dot) * sintheta) / total_mass;
  const double thetaacc = (gravity * sintheta - costheta * temp) /
                          (length * (4.0 / 3.0 - masspole * (costheta * costheta) / total_mass));
  const double xacc = temp - polemass_length * thetaacc * costheta / total_mass;
  x = x + tau * x_dot;
  x_dot = x_dot + tau * xacc;
  theta = theta + tau * theta_dot;
  theta_dot = theta_dot + tau * thetaacc;

  EXPECT_EQ(physics_of(env, 4), (std::vector<double>{x, x_dot, theta, theta_dot}));
  EXPECT_EQ(out.obs, (std::vector<float>{static_cast<float>(x), static_cast<float>(x_dot),
                                         static_cast<float>(theta), static_cast<float>(theta_dot)}));
  EXPECT_EQ(out.result.reward, 1.f);
  EXPECT_FALSE(out.result.terminated);
  EXPECT_FALSE(out.result.truncated);
}

TEST(CartPole, ActionZeroPushesLeft) {
  CartPole env;
  set_physics(env, {0, 0, 0, 0});
  EXPECT_LT(step_discrete(env, 0).obs[1], 0.f);
  set_physics(env, {0, 0, 0, 0});
  EXPECT_GT(step_discrete(env, 1).obs[1], 0.f);
}

TEST(CartPole, TerminatesWhenPoleAngleExceedsTwelveDegrees) {
  CartPole env;
  // theta' = theta + 0.02 * theta_dot: 0.2 + 0.01 = 0.21 > 0.2094 terminates ...
  set_physics(env, {0, 0, 0.2, 0.5});
  auto out = step_discrete(env, 1);
  EXPECT_GT(physics_of(env, 4)[2], kTwelveDegrees);
  EXPECT_TRUE(out.result.terminated);
  EXPECT_EQ(out.result.reward, 1.f);  // the terminating step is rewarded too
  // ... while 0.2 + 0.008 = 0.208 does not; the same holds on the negative side.
  set_physics(env, {0, 0, 0.2, 0.4});
  EXPECT_FALSE(step_discrete(env, 1).result.terminated);
  set_physics(env, {0, 0, -0.2, -0.5});
  EXPECT_TRUE(step_discrete(env, 0).result.terminated);
  set_physics(env, {0, 0, -0.2, -0.4});
  EXPECT_FALSE(step_discrete(env, 0).result.terminated);
}

TEST(CartPole, TerminatesWhenCartLeavesTheTrack) {
  CartPole env;
  // x' = x + 0.02 * x_dot: 2.39 + 0.02 = 2.41 > 2.4, 2.39 + 0.008 = 2.398 < 2.4.
  set_physics(env, {2.39, 1.0, 0, 0});
  EXPECT_TRUE(step_discrete(env, 1).result.terminated);
  set_physics(env, {2.39, 0.4, 0, 0});
  EXPECT_FALSE(step_discrete(env, 1).result.terminated);
  set_physics(env, {-2.39, -1.0, 0, 0});
  EXPECT_TRUE(step_discrete(env, 0).result.terminated);
  set_physics(env, {-2.39, -0.4, 0, 0});
  EXPECT_FALSE(step_discrete(env, 0).result.terminated);
}

TEST(CartPole, SuttonBartoRewardIsZeroPerStepAndMinusOneOnTermination) {
  CartPole env(500, /*sutton_barto_reward=*/true);
  set_physics(env, {0, 0, 0, 0});
  EXPECT_EQ(step_discrete(env, 1).result.reward, 0.f);
  set_physics(env, {0, 0, 0.2, 0.5});
  const auto out = step_discrete(env, 1);
  EXPECT_TRUE(out.result.terminated);
  EXPECT_EQ(out.result.reward, -1.f);
}

TEST(CartPole, TruncatesAtStep500AndNotBefore) {
  CartPole env;
  std::vector<float> obs = reset_env(env, 0);
  // A proportional controller keeps this pole up for the whole episode.
  for (int t = 1; t <= 500; ++t) {
    const auto out = step_discrete(env, obs[2] + 0.5f * obs[3] > 0 ? 1 : 0);
    obs = out.obs;
    ASSERT_FALSE(out.result.terminated) << "step " << t;
    ASSERT_EQ(out.result.truncated, t == 500) << "step " << t;
  }
}

}  // namespace
}  // namespace moonseed::envs
