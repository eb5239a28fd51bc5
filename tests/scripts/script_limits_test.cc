// Limits on user Lua (docs/security.md "Scripts"): reward-shaping arrays are
// bounds-checked, and a script that loops or asks for too much memory gets an
// error naming it, while the process goes on.
#include <atomic>
#include <chrono>
#include <thread>
#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/scripts/shaping_test_util.h"

#include "scripts/state/call_watchdog.h"
#include "scripts/loader/experiment_loader.h"
#include "scripts/state/lua_state.h"
#include "scripts/state/reward_shaper.h"
#include "tests/scripts/loader_test_util.h"
#include "tests/scripts/temp_dir.h"

namespace moonseed::scripts {
namespace {

using testing::TempDir;

using testing::shaping_function;

engine::RewardShapingConfig function(const std::string& source, int first_line = 1) {
  return shaping_function(source, first_line);
}

std::string shape_four(RewardShaper& shaper, std::vector<float>& reward) {
  static const std::vector<float> obs(16, 0.5f);
  static const std::vector<uint8_t> flags(4, 0);
  return shaper.shape(
      0, RewardShaper::GroupStep{4, 0, reward.data(), obs.data(), flags.data(), flags.data(), flags.data()});
}

TEST(ShapingArrays, AWritePastTheRewardsIsAnErrorNamingTheScriptLineAndIndex) {
  RewardShaper shaper(1, RewardShaper::Observations::kFloat32, 4);
  ASSERT_EQ(shaper.install(0, function("function(n, reward)\n  reward[0] = 7\n  reward[n + 100000] = 0\nend", 10)), "");
  std::vector<float> reward = {1, 2, 3, 4};
  const std::string error = shape_four(shaper, reward);
  EXPECT_NE(error.find("exp.lua:12:"), std::string::npos) << error;
  EXPECT_NE(error.find("reward[100004] is out of range: reward has 4 elements, 0 to 3"), std::string::npos) << error;
  EXPECT_EQ(reward, (std::vector<float>{1, 2, 3, 4})) << "what it wrote before failing is undone";
  EXPECT_FALSE(shaper.has_function(0));
}

TEST(ShapingArrays, OutOfRangeReadsAndNegativeIndicesAreErrorsToo) {
  for (const char* body : {"local x = obs[n * obs_size]", "local x = terminated[-1]", "reward[-1] = 0",
                           "local x = truncated[n]", "local x = reward.p"}) {
    RewardShaper shaper(1, RewardShaper::Observations::kFloat32, 4);
    const std::string source =
        std::string("function(n, reward, obs, obs_size, terminated, truncated)\n  ") + body + "\nend";
    ASSERT_EQ(shaper.install(0, function(source)), "");
    std::vector<float> reward = {1, 2, 3, 4};
    const std::string error = shape_four(shaper, reward);
    EXPECT_NE(error.find("exp.lua:2:"), std::string::npos) << body << ": " << error;
  }
}

TEST(ShapingArrays, AnIndexPastTheEndInACompiledLoopIsCaughtAndInRangeLoopsStillWork) {
  // The loop runs long enough for LuaJIT to compile it before it leaves the array.
  RewardShaper shaper(1, RewardShaper::Observations::kFloat32, 4);
  ASSERT_EQ(shaper.install(0, function("function(n, reward)\n"
                                       "  for k = 1, 500 do for i = 0, #reward - 1 do reward[i] = reward[i] + 1 end end\n"
                                       "  for i = 0, 100000 do reward[i] = 0 end\n"
                                       "end")),
            "");
  std::vector<float> reward = {1, 2, 3, 4};
  const std::string error = shape_four(shaper, reward);
  EXPECT_NE(error.find("exp.lua:3: reward[4] is out of range"), std::string::npos) << error;
  EXPECT_EQ(reward, (std::vector<float>{1, 2, 3, 4}));
}

TEST(ShapingArrays, TheMemoryCapTurnsAHugeStringIntoAnErrorAndTheShaperGoesOn) {
  RewardShaper shaper(1, RewardShaper::Observations::kFloat32, 4);
  ASSERT_EQ(shaper.install(0, function("function(n, reward)\n  reward[0] = 9\nend")), "");
  ASSERT_EQ(shaper.install(0, function("function(n, reward)\n  big = string.rep('x', 2^30)\nend", 20)), "");
  std::vector<float> reward = {1, 2, 3, 4};
  const std::string error = shape_four(shaper, reward);
  EXPECT_NE(error.find("not enough memory"), std::string::npos) << error;
  EXPECT_NE(error.find("256 MiB, its memory limit"), std::string::npos) << error;
  EXPECT_NE(error.find("keeping the previous function"), std::string::npos) << error;
  EXPECT_EQ(reward[0], 9) << "the previous function shaped the step";
  EXPECT_EQ(shape_four(shaper, reward), "");
}

TEST(ShapingTrial, RefusesAFunctionThatWritesOutOfRangeOrNeverReturns) {
  const float obs[4] = {0, 0, 0, 0};
  EXPECT_EQ(RewardShaper::trial_error(function("function(n, reward) reward[0] = 1 end"),
                                      RewardShaper::Observations::kFloat32, 4, obs, 1),
            "");
  const std::string range = RewardShaper::trial_error(function("function(n, reward)\n reward[n + 100000] = 0\nend", 7),
                                                      RewardShaper::Observations::kFloat32, 4, obs, 1);
  EXPECT_EQ(range, "reward_shaping failed at exp.lua:8: reward[100001] is out of range: reward has 1 elements, 0 to 0");
  const std::string loop = RewardShaper::trial_error(function("function(n, reward)\n while true do end\nend", 7),
                                                     RewardShaper::Observations::kFloat32, 4, obs, 0.2);
  EXPECT_NE(loop.find("exp.lua:8: the script ran for more than 0.2 s"), std::string::npos) << loop;
}

TEST(ScriptLimits, AnEndlessLoopAtTopLevelEndsWithAnErrorNamingTheScript) {
  TempDir dir;
  const std::string path =
      dir.write("loop.lua", "local x = 1\nassert(jit == nil and not pcall(require, 'jit'))\nwhile true do x = x + 1 end\n");
  LuaLimits limits;
  limits.time_s = 0.2;
  LuaState lua(Sandbox::kOn, limits);
  try {
    lua.run_file(path);
    FAIL() << "the loop returned";
  } catch (const ScriptError& e) {
    EXPECT_NE(std::string(e.what()).find("loop.lua:3: the script ran for more than 0.2 s, its time limit"),
              std::string::npos)
        << e.what();
  }
}

TEST(ScriptLimits, AHugeStringIsRefusedByTheMemoryCapWithAMessageNamingTheScript) {
  TempDir dir;
  const std::string path = dir.write("big.lua", "local s = string.rep('x', 2^30)\nreturn {}\n");
  LuaState lua(Sandbox::kOn, script_limits());
  try {
    lua.run_file(path);
    FAIL() << "the string was made";
  } catch (const ScriptError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("big.lua"), std::string::npos) << message;
    EXPECT_NE(message.find("more than 512 MiB, its memory limit"), std::string::npos) << message;
  }
  EXPECT_TRUE(lua.memory_refused());
  EXPECT_LT(lua.memory_used(), size_t{64} << 20);
}

TEST(ScriptLimits, TheExperimentLoaderAppliesThemToScripts) {
  TempDir dir;
  const std::string path = dir.write("exp.lua", "return { env = { id = 'CartPole-v1' }, name = string.rep('x', 2^30) }\n");
  try {
    load_experiment(path);
    FAIL() << "loaded";
  } catch (const ScriptError& e) {
    EXPECT_NE(std::string(e.what()).find("its memory limit"), std::string::npos) << e.what();
  }
}

TEST(ScriptLimits, TheExperimentLoaderRefusesAShapingFunctionThatFailsItsTrialCall) {
  TempDir dir;
  const std::string path = dir.write("exp.lua",
                                     "return {\n"
                                     "  env = { id = 'CartPole-v1' },\n"
                                     "  reward_shaping = function(n, reward)\n"
                                     "    reward[n + 100000] = 0\n"
                                     "  end,\n"
                                     "}\n");
  const std::vector<ConfigIssue> issues = testing::issues_of(path);
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].line, 3);
  EXPECT_EQ(issues[0].field, "reward_shaping");
  EXPECT_NE(issues[0].message.find("exp.lua:4: reward[100001] is out of range"), std::string::npos)
      << issues[0].message;
}

TEST(CallWatchdog, ACallThatDoesNotEndIsReportedOnceWithItsName) {
  std::atomic<int> stuck_reports{0};
  std::vector<std::string> reported;
  base::Mutex mu;
  {
    CallWatchdog watchdog(0.05, [&](const std::string& what, double limit_s) {
      base::MutexLock lock(mu);
      reported.push_back(what + " " + std::to_string(limit_s));
      if (what == "exp.lua:30") ++stuck_reports;
    });
    watchdog.begin("exp.lua:12");
    watchdog.end();
    watchdog.begin("exp.lua:30");  // never ends
    for (int i = 0; i < 2000 && stuck_reports == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    // More looks at the same stuck call do not report it again.
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  EXPECT_EQ(stuck_reports, 1);
  base::MutexLock lock(mu);
  ASSERT_FALSE(reported.empty());
  EXPECT_EQ(reported.back(), "exp.lua:30 0.050000");
}

}  // namespace
}  // namespace moonseed::scripts
