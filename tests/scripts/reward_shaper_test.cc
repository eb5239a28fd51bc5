// The actors' Lua side of reward shaping, on real arrays.
#include "scripts/state/reward_shaper.h"

#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/scripts/shaping_test_util.h"

namespace moonseed::scripts {
namespace {

using testing::shaping_function;

engine::RewardShapingConfig function(const std::string& source, int first_line = 1) {
  return shaping_function(source, first_line);
}

// Four CartPole-like envs: observations of 4 floats, one terminated, one truncated.
struct Step {
  std::vector<float> reward = {1, 1, 1, 1};
  std::vector<float> obs = {0.5f, 0, 0, 0, -1, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0};
  std::vector<uint8_t> terminated = {0, 1, 0, 0};
  std::vector<uint8_t> truncated = {0, 0, 1, 0};
  std::vector<uint8_t> first = {0, 0, 0, 0};
  int32_t first_env = 0;
  std::string shape(RewardShaper& shaper, int slot = 0) {
    return shaper.shape(slot, RewardShaper::GroupStep{4, first_env, reward.data(), obs.data(), first.data(),
                                                      terminated.data(), truncated.data()});
  }
};

const char* const kCartPolePenalty =
    "function(n, reward, obs, obs_size, terminated, truncated)\n"
    "  for i = 0, n - 1 do\n"
    "    local x = obs[i * obs_size]\n"
    "    reward[i] = reward[i] - 0.1 * x * x - terminated[i] + 10 * truncated[i]\n"
    "  end\n"
    "end";

TEST(RewardShaper, ShapesTheRewardsOfARealArrayFromObservationsAndFlags) {
  RewardShaper shaper(1, RewardShaper::Observations::kFloat32, 4);
  ASSERT_EQ(shaper.install(0, function(kCartPolePenalty)), "");
  Step step;
  ASSERT_EQ(step.shape(shaper), "");
  EXPECT_FLOAT_EQ(step.reward[0], 1 - 0.1f * 0.25f);
  EXPECT_FLOAT_EQ(step.reward[1], 1 - 0.1f * 1 - 1);
  EXPECT_FLOAT_EQ(step.reward[2], 1 - 0.1f * 4 + 10);
  EXPECT_FLOAT_EQ(step.reward[3], 1);
}

// Writes each env's prev_obs[k], obs[k], env and step into its reward, one
// call per field selected by the reward it came with (0..3).
const char* const kEcho =
    "function(n, reward, obs, obs_size, terminated, truncated, prev_obs, env, step)\n"
    "  for i = 0, n - 1 do\n"
    "    local what = reward[i]\n"
    "    if what == 0 then reward[i] = prev_obs[i * obs_size]\n"
    "    elseif what == 1 then reward[i] = obs[i * obs_size]\n"
    "    elseif what == 2 then reward[i] = env[i]\n"
    "    else reward[i] = step[i] end\n"
    "  end\n"
    "end";

// Runs kEcho over `step` with every reward set to `what`: the field per env.
std::vector<float> echo(RewardShaper& shaper, Step step, float what) {
  step.reward.assign(4, what);
  EXPECT_EQ(step.shape(shaper), "");
  return step.reward;
}

TEST(RewardShaper, PrevObsIsTheLastStepsObservationAndOnAResetTheResetObservation) {
  RewardShaper shaper(1, RewardShaper::Observations::kFloat32, 4);
  ASSERT_EQ(shaper.install(0, function(kEcho)), "");
  Step step;
  step.first = {1, 1, 1, 1};
  step.obs[0] = 10, step.obs[4] = 11, step.obs[8] = 12, step.obs[12] = 13;
  EXPECT_EQ(echo(shaper, step, 0), (std::vector<float>{10, 11, 12, 13})) << "a reset: prev_obs is obs";
  step.first = {0, 0, 0, 0};
  step.obs[0] = 20, step.obs[4] = 21, step.obs[8] = 22, step.obs[12] = 23;
  // echo() calls shape() once per field: each call is a step of its own.
  EXPECT_EQ(echo(shaper, step, 0), (std::vector<float>{10, 11, 12, 13}));
  EXPECT_EQ(echo(shaper, step, 1), (std::vector<float>{20, 21, 22, 23}));
  step.first = {0, 1, 0, 0};
  step.obs[0] = 30, step.obs[4] = 31, step.obs[8] = 32, step.obs[12] = 33;
  EXPECT_EQ(echo(shaper, step, 0), (std::vector<float>{20, 31, 22, 23})) << "env 1 was reset";
}

TEST(RewardShaper, StepCountsFromTheResetAndEnvIsTheGroupsFirstEnvPlusTheIndex) {
  RewardShaper shaper(1, RewardShaper::Observations::kFloat32, 4);
  ASSERT_EQ(shaper.install(0, function(kEcho)), "");
  Step step;
  step.first_env = 36;
  step.first = {1, 1, 1, 1};
  EXPECT_EQ(echo(shaper, step, 3), (std::vector<float>{0, 0, 0, 0}));
  step.first = {0, 0, 0, 0};
  EXPECT_EQ(echo(shaper, step, 3), (std::vector<float>{1, 1, 1, 1}));
  EXPECT_EQ(echo(shaper, step, 3), (std::vector<float>{2, 2, 2, 2}));
  step.first = {0, 0, 1, 0};
  EXPECT_EQ(echo(shaper, step, 3), (std::vector<float>{3, 3, 0, 3}));
  EXPECT_EQ(echo(shaper, step, 2), (std::vector<float>{36, 37, 38, 39}));
}

TEST(RewardShaper, ASlotWithoutAFunctionKeepsCountingSoALaterFunctionSeesTheEpisodeSoFar) {
  RewardShaper shaper(1, RewardShaper::Observations::kFloat32, 4);
  Step step;
  step.first = {1, 1, 1, 1};
  ASSERT_EQ(step.shape(shaper), "");
  step.first = {0, 0, 0, 0};
  step.obs[0] = 7;
  ASSERT_EQ(step.shape(shaper), "");
  ASSERT_EQ(shaper.install(0, function(kEcho)), "");
  step.obs[0] = 8;
  EXPECT_EQ(echo(shaper, step, 3)[0], 2);
  EXPECT_EQ(echo(shaper, step, 0)[0], 8) << "prev_obs of the step before";
}

TEST(RewardShaper, TheNewArraysAreCheckedAndReadOnly) {
  RewardShaper shaper(1, RewardShaper::Observations::kFloat32, 4);
  // What one step reports when line 2 of the function is `statement`.
  auto error_of = [&](const std::string& statement) {
    EXPECT_EQ(shaper.install(0, function("function(n, reward, obs, size, te, tr, prev_obs, env, step)\n  " +
                                         statement + "\nend")),
              "");
    Step step;
    return step.shape(shaper);
  };
  for (const std::string index : {"prev_obs[16]", "env[4]", "step[-1]"}) {
    const std::string error = error_of("reward[0] = " + index);
    EXPECT_NE(error.find("exp.lua:2: " + index + " is out of range"), std::string::npos) << error;
  }
  for (const std::string name : {"prev_obs", "env", "step"}) {
    const std::string error = error_of(name + "[0] = 1");
    EXPECT_NE(error.find(name + " cannot be written"), std::string::npos) << error;
  }
}

TEST(RewardShaper, LeavesRewardsAloneWithoutAFunction) {
  RewardShaper shaper(1, RewardShaper::Observations::kFloat32, 4);
  Step step;
  EXPECT_EQ(step.shape(shaper), "");
  EXPECT_EQ(step.reward, (std::vector<float>{1, 1, 1, 1}));
}

TEST(RewardShaper, ReadsUint8ObservationsAsBytes) {
  RewardShaper shaper(1, RewardShaper::Observations::kUInt8, 2);
  ASSERT_EQ(shaper.install(0, function("function(n, reward, obs, size) for i = 0, n - 1 do "
                                       "reward[i] = obs[i * size] + obs[i * size + 1] end end")),
            "");
  std::vector<float> reward = {0, 0};
  std::vector<uint8_t> obs = {200, 100, 7, 255};
  std::vector<uint8_t> flags = {0, 0};
  ASSERT_EQ(shaper.shape(0, RewardShaper::GroupStep{2, 0, reward.data(), obs.data(), flags.data(), flags.data(),
                                                     flags.data()}),
            "");
  EXPECT_EQ(reward, (std::vector<float>{300, 262}));
}

TEST(RewardShaper, ObservationsCannotBeWritten) {
  RewardShaper shaper(1, RewardShaper::Observations::kFloat32, 4);
  ASSERT_EQ(shaper.install(0, function("function(n, reward, obs) obs[0] = 5 end")), "");
  Step step;
  EXPECT_NE(step.shape(shaper), "");
  EXPECT_EQ(step.obs[0], 0.5f);
}

TEST(RewardShaper, ARuntimeErrorReportsFileLineAndThePreviousFunctionShapesThatStepAndTheNext) {
  RewardShaper shaper(1, RewardShaper::Observations::kFloat32, 4);
  ASSERT_EQ(shaper.install(0, function("function(n, reward) for i = 0, n - 1 do reward[i] = 2 * reward[i] end end")),
            "");
  ASSERT_EQ(shaper.install(0, function("function(n, reward)\n"            // line 10
                                       "  for i = 0, n - 1 do reward[i] = 7 + reward[i] end\n"
                                       "  local t = nil\n"
                                       "  return t.x\n"                     // line 13
                                       "end",
                                       10)),
            "");
  Step step;
  const std::string error = step.shape(shaper);
  EXPECT_NE(error.find("reward_shaping failed at exp.lua:13: attempt to index"), std::string::npos) << error;
  EXPECT_NE(error.find("; keeping the previous function"), std::string::npos) << error;
  EXPECT_EQ(step.reward, (std::vector<float>{2, 2, 2, 2})) << "what it wrote was undone, then doubled";
  Step next;
  EXPECT_EQ(next.shape(shaper), "");
  EXPECT_EQ(next.reward, (std::vector<float>{2, 2, 2, 2}));
}

TEST(RewardShaper, ARuntimeErrorOfTheOnlyFunctionRestoresTheRewardsAndLeavesNoShaping) {
  RewardShaper shaper(1, RewardShaper::Observations::kFloat32, 4);
  ASSERT_EQ(shaper.install(0, function("function(n, reward) reward[0] = 9; error('no') end")), "");
  Step step;
  const std::string error = step.shape(shaper);
  EXPECT_NE(error.find("exp.lua:1: no; running without reward shaping"), std::string::npos) << error;
  EXPECT_EQ(step.reward, (std::vector<float>{1, 1, 1, 1}));
  EXPECT_FALSE(shaper.has_function(0));
  Step next;
  EXPECT_EQ(next.shape(shaper), "");
  EXPECT_EQ(next.reward, (std::vector<float>{1, 1, 1, 1}));
}

TEST(RewardShaper, AFailureIsReportedOnceAndOtherSlotsDropTheFunctionToo) {
  RewardShaper shaper(2, RewardShaper::Observations::kFloat32, 4);
  const auto broken = function("function(n, reward) error('broken') end");
  ASSERT_EQ(shaper.install(0, broken), "");
  ASSERT_EQ(shaper.install(1, broken), "");
  Step a, b;
  EXPECT_NE(a.shape(shaper, 0), "");
  EXPECT_EQ(b.shape(shaper, 1), "");
  EXPECT_FALSE(shaper.has_function(1));
}

TEST(RewardShaper, ASecondInstallReplacesTheFunction) {
  RewardShaper shaper(1, RewardShaper::Observations::kFloat32, 4);
  ASSERT_EQ(shaper.install(0, function("function(n, reward) for i = 0, n - 1 do reward[i] = 2 end end")), "");
  Step first;
  ASSERT_EQ(first.shape(shaper), "");
  EXPECT_EQ(first.reward[0], 2);
  ASSERT_EQ(shaper.install(0, function("function(n, reward) for i = 0, n - 1 do reward[i] = 3 end end")), "");
  Step second;
  ASSERT_EQ(second.shape(shaper), "");
  EXPECT_EQ(second.reward[0], 3);
}

TEST(RewardShaper, AFunctionThatDoesNotCompileIsNotInstalled) {
  RewardShaper shaper(1, RewardShaper::Observations::kFloat32, 4);
  ASSERT_EQ(shaper.install(0, function("function(n, reward) for i = 0, n - 1 do reward[i] = 2 end end")), "");
  const std::string error = shaper.install(0, function("function(n, reward)\n  reward[0] = = 1\nend", 5));
  EXPECT_NE(error.find("reward_shaping does not compile: exp.lua:6:"), std::string::npos) << error;
  EXPECT_NE(error.find("keeping the previous function"), std::string::npos) << error;
  Step step;
  ASSERT_EQ(step.shape(shaper), "");
  EXPECT_EQ(step.reward[0], 2);
}

TEST(RewardShaper, FunctionsSeeOnlyTheStandardLibrariesAndKeepTheirGlobals) {
  RewardShaper shaper(1, RewardShaper::Observations::kFloat32, 4);
  ASSERT_EQ(shaper.install(0, function("function(n, reward)\n"
                                       "  calls = (calls or 0) + 1\n"
                                       "  reward[0] = calls\n"
                                       "  reward[1] = (require or ffi or os or io or debug) and 1 or 0\n"
                                       "  reward[2] = math.floor(bit.band(6, 3) + #string.rep('x', 2) + #table.concat({}))\n"
                                       "end")),
            "");
  Step first, second;
  ASSERT_EQ(first.shape(shaper), "");
  ASSERT_EQ(second.shape(shaper), "");
  EXPECT_EQ(second.reward[0], 2);
  EXPECT_EQ(second.reward[1], 0) << "no require, ffi, os, io or debug";
  EXPECT_EQ(second.reward[2], 4);
}

TEST(RewardShaper, CompileErrorNamesTheFileAndLineOfTheScript) {
  EXPECT_EQ(RewardShaper::compile_error(function("function(n, reward) end", 3)), "");
  const std::string error = RewardShaper::compile_error(function("function(n, reward)\n  x = = 1\nend", 3));
  EXPECT_NE(error.find("exp.lua:4:"), std::string::npos) << error;
}

}  // namespace
}  // namespace moonseed::scripts
