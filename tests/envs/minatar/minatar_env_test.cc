// What every MinAtar env shares: ids, spaces, options and the sticky-action rule.
#include "envs/minatar/minatar_env.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "envs/env.h"

namespace moonseed::envs {
namespace {

std::vector<uint8_t> obs_of(const Env& env) {
  return std::vector<uint8_t>(static_cast<size_t>(env.spec().observation.byte_size()));
}

TEST(MinAtar, TheGamesAreRegisteredAsThePackageNamesThem) {
  EXPECT_EQ(minatar::game_names(), (std::vector<std::string>{"Asterix", "Breakout", "Freeway",
                                                              "Seaquest", "SpaceInvaders"}));
  const std::vector<std::string> ids = env_ids();
  for (const std::string& game : minatar::game_names()) {
    for (const char* version : {"-v0", "-v1"}) {
      const std::string id = "MinAtar/" + game + version;
      EXPECT_NE(std::find(ids.begin(), ids.end(), id), ids.end()) << id;
    }
  }
}

// Channels and minimal action sets of the package's games.
TEST(MinAtar, SpacesAreThePackages) {
  struct Expected {
    const char* game;
    int64_t channels, minimal;
  };
  for (const Expected& e : {Expected{"Breakout", 4, 3}, Expected{"Freeway", 7, 3},
                            Expected{"Asterix", 4, 5}, Expected{"Seaquest", 10, 6},
                            Expected{"SpaceInvaders", 6, 4}}) {
    auto full = make_env(std::string("MinAtar/") + e.game + "-v0");
    auto minimal = make_env(std::string("MinAtar/") + e.game + "-v1");
    EXPECT_EQ(full->spec().observation.shape, (std::vector<int64_t>{10, 10, e.channels})) << e.game;
    EXPECT_EQ(full->spec().observation.dtype, DType::kUInt8);
    EXPECT_EQ(full->spec().observation.byte_size(), 100 * e.channels);
    EXPECT_EQ(full->spec().action.n, 6);
    EXPECT_EQ(minimal->spec().action.n, e.minimal) << e.game;
    EXPECT_EQ(full->spec().max_episode_steps, 0);
  }
}

TEST(MinAtar, OptionsAreCheckedWithTheirNames) {
  auto message = [](const EnvOptions& options) {
    try {
      make_env("MinAtar/Breakout-v1", options);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message({{"sticky_action_prob", 1.5}}).find("sticky_action_prob must be in [0, 1], got 1.5"),
            std::string::npos);
  EXPECT_NE(message({{"difficulty_ramping", 2}}).find("difficulty_ramping must be 0 or 1"),
            std::string::npos);
  EXPECT_NE(message({{"ramping", 1}}).find("accepted options: difficulty_ramping, max_episode_steps, "
                                           "sticky_action_prob"),
            std::string::npos);
  EXPECT_EQ(make_env("MinAtar/Breakout-v1", {{"max_episode_steps", 7}})->spec().max_episode_steps, 7);
}

// With sticky_action_prob = 1 every step repeats the previous action, which starts as noop and
// survives resets as in the package: the paddle never moves.
TEST(MinAtar, StickyActionsRepeatThePreviousActionAcrossResets) {
  auto env = make_env("MinAtar/Breakout-v1", {{"sticky_action_prob", 1}});
  auto still = make_env("MinAtar/Breakout-v1", {{"sticky_action_prob", 0}});
  std::vector<uint8_t> a = obs_of(*env), b = obs_of(*still);
  env->reset(3, a.data());
  still->reset(3, b.data());
  const int32_t left = 1, noop = 0;
  for (int t = 0; t < 5; ++t) {
    env->step(&left, a.data());
    still->step(&noop, b.data());
    // The paddle channel (0) of the bottom row: it stays at column 4.
    for (int col = 0; col < 10; ++col) EXPECT_EQ(a[(90 + col) * 4], col == 4 ? 1 : 0) << t;
  }
  // The previous action lives in the state, so the copy continues identically.
  EXPECT_EQ(env->get_state()[3], 0.0);
  auto moved = make_env("MinAtar/Breakout-v1", {{"sticky_action_prob", 0}});
  std::vector<uint8_t> c = obs_of(*moved);
  moved->reset(3, c.data());
  moved->step(&left, c.data());
  EXPECT_EQ(moved->get_state()[3], 1.0);  // FullAction left
}

TEST(MinAtar, SeedsAbove32BitsAreValidAndDistinct) {
  auto env = make_env("MinAtar/Freeway-v0");
  std::vector<uint8_t> small = obs_of(*env), large = obs_of(*env), again = obs_of(*env);
  env->reset(7, small.data());
  env->reset((1ULL << 32) + 7, large.data());
  env->reset((1ULL << 32) + 7, again.data());
  EXPECT_NE(small, large);
  EXPECT_EQ(large, again);
}

}  // namespace
}  // namespace moonseed::envs
