#include "envs/classic/cartpole_no_velocity.h"

#include <gtest/gtest.h>

#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "envs/classic/cartpole.h"
#include "tests/envs/env_test_util.h"

namespace moonseed::envs {
namespace {

using testing::Outcome;
using testing::reset_env;
using testing::step_discrete;

constexpr double kTwelveDegrees = 12 * 2 * 3.141592653589793 / 360;

// CartPole's observation reduced to what CartPoleNoVelocity shows: [x, theta].
std::vector<float> position_and_angle(const std::vector<float>& full) { return {full[0], full[2]}; }

TEST(CartPoleNoVelocity, SpecIsCartPolesWithATwoElementObservation) {
  CartPoleNoVelocity env;
  const EnvSpec& spec = env.spec();
  EXPECT_EQ(spec.id, "CartPoleNoVelocity-v1");
  EXPECT_EQ(spec.max_episode_steps, 500);
  EXPECT_EQ(spec.action, CartPole().spec().action);
  EXPECT_EQ(spec.observation.kind, SpaceKind::kBox);
  EXPECT_EQ(spec.observation.dtype, DType::kFloat32);
  EXPECT_EQ(spec.observation.shape, std::vector<int64_t>{2});
  const float angle = static_cast<float>(2 * kTwelveDegrees);
  EXPECT_EQ(spec.observation.high, (std::vector<float>{4.8f, angle}));
  EXPECT_EQ(spec.observation.low, (std::vector<float>{-4.8f, -angle}));
}

// The same seed and actions in both envs, episode after episode (reset without a seed in
// between): every observation is CartPole's elements 0 and 2, everything else identical.
// Every fourth episode is played by a controller that sees the full CartPole state, so it
// reaches the time limit; the others by random actions, so they terminate early.
TEST(CartPoleNoVelocity, FollowsCartPoleStepForStepAcrossEpisodes) {
  CartPole full;
  CartPoleNoVelocity partial;
  std::vector<float> full_obs = reset_env(full, 31);
  ASSERT_EQ(reset_env(partial, 31), position_and_angle(full_obs));
  std::mt19937 random(5);
  int episode = 0, terminations = 0, truncations = 0;
  for (int t = 0; t < 2500; ++t) {
    const int32_t action = episode % 4 == 0 ? (full_obs[2] + 0.5f * full_obs[3] > 0 ? 1 : 0)
                                            : static_cast<int32_t>(random() % 2);
    const Outcome a = step_discrete(full, action);
    const Outcome b = step_discrete(partial, action);
    ASSERT_EQ(b.obs, position_and_angle(a.obs)) << "step " << t;
    ASSERT_EQ(b.result.reward, a.result.reward) << "step " << t;
    ASSERT_EQ(b.result.terminated, a.result.terminated) << "step " << t;
    ASSERT_EQ(b.result.truncated, a.result.truncated) << "step " << t;
    ASSERT_EQ(partial.get_state(), full.get_state()) << "step " << t;
    full_obs = a.obs;
    if (a.result.terminated || a.result.truncated) {
      terminations += a.result.terminated;
      truncations += a.result.truncated;
      ++episode;
      full_obs = reset_env(full, std::nullopt);
      ASSERT_EQ(reset_env(partial, std::nullopt), position_and_angle(full_obs));
    }
  }
  // The comparison covered both ways an episode ends.
  EXPECT_GE(truncations, 2);
  EXPECT_GE(terminations, 5);
}

TEST(CartPoleNoVelocity, TakesCartPolesOptions) {
  CartPole full(7, /*sutton_barto_reward=*/true);
  CartPoleNoVelocity partial(7, /*sutton_barto_reward=*/true);
  EXPECT_EQ(partial.spec().max_episode_steps, 7);
  reset_env(full, 3);
  reset_env(partial, 3);
  for (int t = 1; t <= 7; ++t) {
    const Outcome a = step_discrete(full, t % 2);
    const Outcome b = step_discrete(partial, t % 2);
    EXPECT_EQ(b.result.reward, 0.f);
    EXPECT_EQ(b.result.reward, a.result.reward);
    EXPECT_EQ(b.result.truncated, t == 7);
  }
  const auto made =
      make_env("CartPoleNoVelocity-v1", {{"max_episode_steps", 9}, {"sutton_barto_reward", 1}});
  EXPECT_EQ(made->spec().max_episode_steps, 9);
  EXPECT_EQ(made->spec().observation.numel(), 2);
}

// Its state is CartPole's: a CartPole-v1 snapshot continues identically in it.
TEST(CartPoleNoVelocity, ContinuesFromACartPoleState) {
  CartPole full;
  reset_env(full, 11);
  for (int t = 0; t < 10; ++t) step_discrete(full, t % 2);
  CartPoleNoVelocity partial;
  partial.set_state(full.get_state());
  for (int t = 0; t < 10; ++t) {
    const Outcome a = step_discrete(full, 1);
    EXPECT_EQ(step_discrete(partial, 1).obs, position_and_angle(a.obs));
  }
}

TEST(CartPoleNoVelocity, ErrorsNameThisEnvAndKeepTheirType) {
  CartPoleNoVelocity env;
  std::vector<float> obs(2);
  const int32_t action = 2;
  EXPECT_THROW(env.step(&action, obs.data()), std::logic_error);  // before reset
  reset_env(env, 0);
  try {
    env.step(&action, obs.data());
    FAIL() << "expected invalid_argument";
  } catch (const std::invalid_argument& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("CartPoleNoVelocity-v1"), std::string::npos) << message;
    EXPECT_NE(message.find("action 2"), std::string::npos) << message;
  }
  EXPECT_THROW(env.set_state({1.0, 2.0}), std::invalid_argument);
}

}  // namespace
}  // namespace moonseed::envs
