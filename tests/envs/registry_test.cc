#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "envs/env.h"
#include "envs/minatar/minatar_env.h"
#include "tests/envs/env_test_util.h"

namespace moonseed::envs {
namespace {

std::string error_of(const std::string& id, const EnvOptions& options) {
  try {
    make_env(id, options);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(Registry, ListsClassicControlMemoryTasksMinAtarMujocoAndSyntheticAtariSorted) {
  const std::vector<std::string> ids = env_ids();
  EXPECT_TRUE(std::is_sorted(ids.begin(), ids.end()));
  std::vector<std::string> others, minatar;
  for (const std::string& id : ids) (id.rfind("MinAtar/", 0) == 0 ? minatar : others).push_back(id);
  EXPECT_EQ(others,
            (std::vector<std::string>{"Acrobot-v1", "CartPole-v1", "CartPoleNoVelocity-v1",
                                      "CueRecall-v0", "MountainCar-v0", "MountainCarContinuous-v0",
                                      "MuJoCo/Humanoid-v0", "MuJoCo/InvertedPendulum-v0", "MuJoCo/Model-v0",
                                      "Pendulum-v1", "SyntheticAtari-v0"}));
  // MinAtar/<Game>-v0 and -v1 for each game (tests/envs/minatar/minatar_env_test.cc).
  EXPECT_EQ(minatar.size(), 2 * minatar::game_names().size());
}

TEST(Registry, MakesEachKnownIdWithItsSpec) {
  for (const std::string& id : env_ids()) {
    if (!testing::unavailable_because(id).empty()) continue;  // mujoco_test.cc skips it, saying why
    const auto env = testing::make_test_env(id);
    ASSERT_NE(env, nullptr);
    EXPECT_EQ(env->spec().id, id);
  }
}

TEST(Registry, DefaultTimeLimitsAreGymnasiums) {
  EXPECT_EQ(make_env("CartPole-v1")->spec().max_episode_steps, 500);
  EXPECT_EQ(make_env("Acrobot-v1")->spec().max_episode_steps, 500);
  EXPECT_EQ(make_env("MountainCar-v0")->spec().max_episode_steps, 200);
  EXPECT_EQ(make_env("MountainCarContinuous-v0")->spec().max_episode_steps, 999);
  EXPECT_EQ(make_env("Pendulum-v1")->spec().max_episode_steps, 200);
  EXPECT_EQ(make_env("CartPoleNoVelocity-v1")->spec().max_episode_steps, 500);
  // CueRecall ends by itself after delay + 2 steps; it has no time limit unless asked.
  EXPECT_EQ(make_env("CueRecall-v0")->spec().max_episode_steps, 0);
  // SyntheticAtari ends after a drawn length of 500 to 1500 steps, as CueRecall by itself.
  EXPECT_EQ(make_env("SyntheticAtari-v0")->spec().max_episode_steps, 0);
}

TEST(Registry, UnknownIdIsRejectedListingKnownIds) {
  const std::string error = error_of("CartPole-v0", {});
  EXPECT_TRUE(contains(error, "\"CartPole-v0\"")) << error;
  for (const std::string& id : env_ids()) EXPECT_TRUE(contains(error, id)) << error;
}

TEST(Registry, UnknownOptionIsRejectedNamingItAndTheAcceptedOnes) {
  const std::string error = error_of("Pendulum-v1", {{"gravity", 9.81}});
  EXPECT_TRUE(contains(error, "\"gravity\"")) << error;
  EXPECT_TRUE(contains(error, "g, max_episode_steps")) << error;
  // An option of another env is still unknown here.
  EXPECT_TRUE(contains(error_of("CartPole-v1", {{"goal_velocity", 0}}), "\"goal_velocity\""));
}

TEST(Registry, RepeatedOptionIsRejected) {
  const std::string error =
      error_of("CartPole-v1", {{"max_episode_steps", 10}, {"max_episode_steps", 20}});
  EXPECT_TRUE(contains(error, "max_episode_steps")) << error;
}

TEST(Registry, MaxEpisodeStepsMustBeANonNegativeInteger) {
  EXPECT_TRUE(contains(error_of("CartPole-v1", {{"max_episode_steps", -1}}), "-1"));
  EXPECT_TRUE(contains(error_of("CartPole-v1", {{"max_episode_steps", 2.5}}), "2.5"));
  EXPECT_EQ(make_env("CartPole-v1", {{"max_episode_steps", 42}})->spec().max_episode_steps, 42);
}

TEST(Registry, FlagOptionsMustBeZeroOrOne) {
  EXPECT_TRUE(contains(error_of("CartPole-v1", {{"sutton_barto_reward", 2}}), "0 or 1"));
  EXPECT_NO_THROW(make_env("CartPole-v1", {{"sutton_barto_reward", 1}}));
}

TEST(Registry, RealOptionsMustBeFinite) {
  EXPECT_TRUE(contains(error_of("Pendulum-v1", {{"g", std::nan("")}}), "g must be finite"));
  EXPECT_NO_THROW(make_env("MountainCar-v0", {{"goal_velocity", 0.01}}));
  EXPECT_NO_THROW(make_env("MountainCarContinuous-v0", {{"goal_velocity", 0.01}}));
}

}  // namespace
}  // namespace moonseed::envs
