// `reward_shaping` in experiment scripts: the loader keeps the function's exact
// text, refuses what cannot run in another process, writes it back in
// config.lua and sees it change.
#include "scripts/api/shaping_function.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "engine/config/diff.h"
#include "engine/config/schema.h"
#include "scripts/loader/experiment_loader.h"
#include "scripts/state/lua_state.h"
#include "tests/engine/config/all_fields_config.h"
#include "tests/scripts/loader_test_util.h"
#include "tests/scripts/temp_dir.h"

namespace moonseed::scripts {
namespace {

using testing::issues_of;
using testing::TempDir;

const char* const kHeader = "local ms = require 'moonseed'\n";

TEST(ShapingFunction, AFunctionInlineInTheExperimentTableKeepsItsExactTextFileAndLine) {
  TempDir dir;
  const std::string path = dir.write("exp.lua", std::string(kHeader) +            // 1
                                                    "return ms.experiment {\n"     // 2
                                                    "  env = { id = 'CartPole-v1' },\n"
                                                    "  reward_shaping = function(n, r) for i = 0, n - 1 do r[i] = 2 * r[i] end end,\n"
                                                    "  seed = 3,\n"
                                                    "}\n");
  const engine::ExperimentConfig c = load_experiment(path);
  EXPECT_EQ(c.reward_shaping.source, "function(n, r) for i = 0, n - 1 do r[i] = 2 * r[i] end end");
  EXPECT_EQ(c.reward_shaping.chunk_name, "@" + path);
  EXPECT_EQ(c.reward_shaping.first_line, 4);
  EXPECT_EQ(c.seed, 3u);
}

TEST(ShapingFunction, AMultiLineFunctionWithNestedFunctionsAndStringsHoldingEndIsTakenWhole) {
  TempDir dir;
  const std::string function =
      "function(n, reward, obs, obs_size, terminated, truncated)\n"
      "    local function square(x) return x * x end -- an end in a comment\n"
      "    local label = \"the end\" .. 'end' .. [[\n"
      "end]]\n"
      "    for i = 0, n - 1 do\n"
      "      if terminated[i] == 1 then reward[i] = reward[i] - 1 elseif truncated[i] == 1 then reward[i] = 0 end\n"
      "      reward[i] = reward[i] - 0.1 * square(obs[i * obs_size])\n"
      "    end\n"
      "  end";
  const std::string path = dir.write("exp.lua", std::string(kHeader) +
                                                    "return ms.experiment {\n"
                                                    "  seed = 3,\n"
                                                    "  reward_shaping = " + function + ",\n"
                                                    "  log = { interval_s = 2 },\n"
                                                    "}\n");
  const engine::ExperimentConfig c = load_experiment(path);
  EXPECT_EQ(c.reward_shaping.source, function);
  EXPECT_EQ(c.reward_shaping.first_line, 4);
  EXPECT_EQ(c.log.interval_s, 2);
}

TEST(ShapingFunction, ANamedLocalFunctionBecomesAnExpressionWithItsLinesKept) {
  TempDir dir;
  const std::string path = dir.write("exp.lua",
                                     "local function shape(n, reward)\n"       // 1
                                     "  for i = 0, n - 1 do reward[i] = 1 end\n"
                                     "end\n"
                                     "return { reward_shaping = shape }\n");
  const engine::ExperimentConfig c = load_experiment(path);
  EXPECT_EQ(c.reward_shaping.source, "function(n, reward)\n  for i = 0, n - 1 do reward[i] = 1 end\nend");
  EXPECT_EQ(c.reward_shaping.first_line, 1);
}

TEST(ShapingFunction, AFunctionFromARecipeNamesTheRecipeFile) {
  TempDir dir;
  const std::string recipe = dir.write("team/shaped.lua",
                                       "return {\n"
                                       "  reward_shaping = function(n, reward)\n"   // 2
                                       "    for i = 0, n - 1 do reward[i] = 0 end\n"
                                       "  end,\n"
                                       "}\n");
  const std::string path = dir.write("exp.lua", "return { extends = 'team.shaped', seed = 5 }\n");
  const engine::ExperimentConfig c = load_experiment(path);
  EXPECT_EQ(c.reward_shaping.chunk_name, "@" + recipe);
  EXPECT_EQ(c.reward_shaping.first_line, 2);
}

TEST(ShapingFunction, FalseRemovesTheFunctionOfTheRecipeItExtends) {
  TempDir dir;
  dir.write("team/shaped.lua", "return { reward_shaping = function(n, reward) end }\n");
  const std::string path = dir.write("exp.lua", "return { extends = 'team.shaped', reward_shaping = false }\n");
  EXPECT_TRUE(load_experiment(path).reward_shaping.source.empty());
}

TEST(ShapingFunction, AFunctionWithAnUpvalueIsRefusedAtItsFileAndLineNamingTheVariable) {
  TempDir dir;
  const std::string path = dir.write("exp.lua",
                                     "local scale = 0.1\n"
                                     "return {\n"
                                     "  reward_shaping = function(n, reward)\n"   // 3
                                     "    for i = 0, n - 1 do reward[i] = scale * reward[i] end\n"
                                     "  end,\n"
                                     "}\n");
  const auto issues = issues_of(path);
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].file, path);
  EXPECT_EQ(issues[0].line, 3);
  EXPECT_EQ(issues[0].field, "reward_shaping");
  EXPECT_NE(issues[0].message.find("'scale'"), std::string::npos) << issues[0].message;
  EXPECT_NE(issues[0].message.find("runs in each actor process"), std::string::npos) << issues[0].message;
}

TEST(ShapingFunction, ASyntaxErrorInTheFunctionIsReportedAtItsFileAndLineBeforeAnythingRuns) {
  TempDir dir;
  const std::string path = dir.write("exp.lua",
                                     "return {\n"
                                     "  reward_shaping = function(n, reward)\n"
                                     "    for i = 0, n - 1 do reward[i] = = 1 end\n"   // 3
                                     "  end,\n"
                                     "}\n");
  try {
    load_experiment(path);
    FAIL() << "loaded";
  } catch (const ScriptError& e) {
    EXPECT_NE(std::string(e.what()).find(path + ":3:"), std::string::npos) << e.what();
  }
}

TEST(ShapingFunction, AValueThatIsNotAFunctionNamesTheFieldAndWhatItGot) {
  TempDir dir;
  const std::string path = dir.write("exp.lua", "return {\n  reward_shaping = 2,\n}\n");
  const auto issues = issues_of(path);
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].str(), path + ":2: reward_shaping: expected a function (or false for none), got number 2");
}

TEST(ShapingFunction, AMisspelledKeySuggestsRewardShaping) {
  TempDir dir;
  const std::string path = dir.write("exp.lua", "return {\n  reward_shapng = function(n, reward) end,\n}\n");
  const auto issues = issues_of(path);
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_NE(issues[0].message.find("did you mean 'reward_shaping'?"), std::string::npos) << issues[0].message;
}

TEST(ShapingFunction, ACommandLineOverrideIsRefused) {
  TempDir dir;
  const std::string path = dir.write("exp.lua", "return {}\n");
  const auto issues = issues_of(path, {"reward_shaping=x"});
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_NE(issues[0].message.find("is a Lua function: set it in the script"), std::string::npos);
}

TEST(ShapingFunction, TwoFunctionsOnTheSameLinesAreToldApartByTheirParameters) {
  TempDir dir;
  const std::string path = dir.write("exp.lua",
                                     "local other = function(a) return a end; return { reward_shaping = "
                                     "function(n, reward) reward[0] = 1 end, seed = other(4) }\n");
  const engine::ExperimentConfig c = load_experiment(path);
  EXPECT_EQ(c.reward_shaping.source, "function(n, reward) reward[0] = 1 end");
}

TEST(ShapingFunction, ToLuaWritesTheFunctionBackAndTheConfigRoundTrips) {
  TempDir dir;
  const engine::ExperimentConfig original = test::config_with_every_field_changed();
  const std::string path = dir.write("config.lua", to_lua(original));
  const engine::ExperimentConfig loaded = load_experiment(path);
  EXPECT_EQ(loaded.reward_shaping.source, original.reward_shaping.source);
  // Read back, errors point at config.lua, the file a resumed run watches.
  EXPECT_EQ(loaded.reward_shaping.chunk_name, "@" + path);
  EXPECT_TRUE(engine::changed_fields(original, loaded).empty());
}

TEST(ShapingFunction, ToLuaWritesFalseWhenThereIsNoFunction) {
  EXPECT_NE(to_lua(engine::ExperimentConfig{}).find("  reward_shaping = false,\n"), std::string::npos);
}

TEST(ShapingFunction, TheDiffSeesAChangedFunctionAsABoundaryChange) {
  engine::ExperimentConfig before = test::config_with_every_field_changed();
  engine::ExperimentConfig after = before;
  after.reward_shaping.source = "function(n, reward) end";
  const engine::ConfigDiff diff = engine::diff_configs(before, after);
  ASSERT_EQ(diff.changes.size(), 1u);
  EXPECT_EQ(diff.changes[0].path, "reward_shaping");
  EXPECT_EQ(diff.changes[0].reload, engine::ReloadClass::kBoundary);
  EXPECT_EQ(diff.summary(), "reward_shaping (function) -> (function changed)");
  EXPECT_TRUE(diff.refused().empty());
}

TEST(ShapingFunction, TheDiffIgnoresAFunctionThatOnlyMoved) {
  engine::ExperimentConfig before = test::config_with_every_field_changed();
  engine::ExperimentConfig after = before;
  after.reward_shaping.first_line += 3;
  EXPECT_TRUE(engine::diff_configs(before, after).empty());
}

TEST(ShapingFunction, ACFunctionIsRefused) {
  LuaState lua(Sandbox::kOn);
  lua_getglobal(lua.get(), "print");
  const ShapingRead read = read_shaping_function(lua.get(), -1);
  EXPECT_NE(read.problem.find("got a C function"), std::string::npos) << read.problem;
}

TEST(ShapingFunction, AFunctionCompiledFromAStringIsRefused) {
  LuaState lua(Sandbox::kOn);
  ASSERT_EQ(luaL_dostring(lua.get(), "return function(n, reward) end"), 0);
  const ShapingRead read = read_shaping_function(lua.get(), -1);
  EXPECT_NE(read.problem.find("must be written in a script file"), std::string::npos) << read.problem;
}

}  // namespace
}  // namespace moonseed::scripts
