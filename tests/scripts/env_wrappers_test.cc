// env.wrappers in experiment scripts: ms.wrap.* and plain tables, read by load_experiment with
// errors that point at the wrapper; the model and the reward-shaping trial see the wrapped spec.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "engine/config/schema.h"
#include "engine/config/values.h"
#include "scripts/loader/experiment_loader.h"
#include "tests/scripts/loader_test_util.h"
#include "tests/scripts/temp_dir.h"

namespace moonseed::scripts {
namespace {

using testing::TempDir;
using testing::issues_of;

// Writes an experiment whose env.wrappers is `wrappers` (starting on line 4) and whose other
// fields are `rest`.
std::string script_with_wrappers(TempDir& dir, const std::string& wrappers, const std::string& rest = "",
                                 const std::string& env = "CartPole-v1") {
  return dir.write("wrapped.lua", "local ms = require 'moonseed'\n"  // 1
                                  "return ms.experiment {\n"         // 2
                                  "  env = { id = '" + env + "',\n"  // 3
                                  "    wrappers = " + wrappers + " },\n" +  // 4...
                                  rest + "}\n");
}

envs::WrapperSpec made(const std::string& kind, const std::vector<std::pair<std::string, double>>& given = {}) {
  envs::WrapperSpec w;
  EXPECT_EQ(envs::make_wrapper(kind, given, &w), "");
  return w;
}

TEST(EnvWrappers, LoadInOrderFromHelpersPlainTablesAndNamesWithDefaultsFilledIn) {
  TempDir dir;
  const engine::ExperimentConfig c = load_experiment(script_with_wrappers(
      dir,
      "{ ms.wrap.time_limit(200), ms.wrap.action_repeat(2, false), { 'frame_stack', n = 3 },\n"
      "      { kind = 'sticky_actions', p = 0.1 }, 'clip_reward', ms.wrap.scale_obs { scale = 2 } }"));
  const envs::WrapperList expected = {made("time_limit", {{"max_steps", 200}}),
                                      made("action_repeat", {{"k", 2}, {"max_pool", 0}}),
                                      made("frame_stack", {{"n", 3}}),
                                      made("sticky_actions", {{"p", 0.1}}),
                                      made("clip_reward"),
                                      made("scale_obs", {{"scale", 2}})};
  EXPECT_EQ(c.env.wrappers, expected);
}

TEST(EnvWrappers, TheWrappedMinAtarExampleLoadsItsListAndTheRecipesModelFitsTheStack) {
  const engine::ExperimentConfig c = load_experiment(std::string(MOONSEED_SOURCE_DIR) + "/examples/minatar_wrapped.lua");
  EXPECT_EQ(c.env.wrappers, (envs::WrapperList{made("sticky_actions", {{"p", 0.1}}),
                                               made("time_limit", {{"max_steps", 10000}}),
                                               made("frame_stack", {{"n", 2}}), made("clip_reward")}));
  EXPECT_EQ(c.env.options, (engine::NumberMap{{"sticky_action_prob", 0}}));
}

TEST(EnvWrappers, ABadParameterPointsAtTheHelperCallNamingThePlace) {
  TempDir dir;
  const std::string path = script_with_wrappers(dir,
                                                "{\n"                          // 4
                                                "      ms.wrap.time_limit(50),\n"  // 5
                                                "      ms.wrap.frame_stack(0),\n"  // 6
                                                "    }");
  const auto issues = issues_of(path);
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].file, path);
  EXPECT_EQ(issues[0].line, 6);
  EXPECT_EQ(issues[0].field, "env.wrappers[2] (frame_stack)");
  EXPECT_EQ(issues[0].message, "n must be an integer in [1, 64], got 0");
  EXPECT_EQ(issues[0].str(), path + ":6: env.wrappers[2] (frame_stack): n must be an integer in [1, 64], got 0");
}

TEST(EnvWrappers, UnknownKindsAndParametersAreNamedWithASuggestion) {
  TempDir dir;
  auto issues = issues_of(script_with_wrappers(dir, "{ { 'frame_stak', n = 2 } }"));
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].field, "env.wrappers[1]");
  EXPECT_EQ(issues[0].line, 4);  // a plain table records no line: where wrappers is set
  EXPECT_NE(issues[0].message.find("unknown wrapper \"frame_stak\"; did you mean \"frame_stack\"?"), std::string::npos)
      << issues[0].message;
  issues = issues_of(script_with_wrappers(dir, "{ ms.wrap.action_repeat { k = 2, maxpool = 1 } }"));
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].message,
            "unknown parameter \"maxpool\"; did you mean \"max_pool\"? (action_repeat takes k, max_pool)");
  issues = issues_of(script_with_wrappers(dir, "{ 'time_limit' }"));
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].message, "time_limit needs max_steps");
  issues = issues_of(script_with_wrappers(dir, "{ ms.wrap.frame_stack('four') }"));
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].field, "env.wrappers[1].n");
  EXPECT_EQ(issues[0].message, "expected a number, got string");
  issues = issues_of(script_with_wrappers(dir, "{ first = 'clip_reward' }"));
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].field, "env.wrappers");
  EXPECT_NE(issues[0].message.find("expected a list of wrappers"), std::string::npos) << issues[0].message;
}

TEST(EnvWrappers, TheModelIsBuiltForTheWrappedSpec) {
  TempDir dir;
  // frame_stack(2) over CartPole: 8 inputs. A first layer written for 4 is still fine (linear
  // layers take any width), but a conv over a rank-1 observation names the wrapped size.
  const auto issues = issues_of(script_with_wrappers(dir, "{ ms.wrap.frame_stack(2) }",
                                                     "  model = ms.layers { ms.nn.conv2d(4, 2) },\n"));
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_NE(issues[0].message.find("(its input is 8)"), std::string::npos) << issues[0].message;
}

TEST(EnvWrappers, TheRewardShapingTrialSeesTheWrappedObservation) {
  TempDir dir;
  const std::string path = script_with_wrappers(
      dir, "{ ms.wrap.frame_stack(2), ms.wrap.scale_obs(2) }",
      "  reward_shaping = function(n, reward, obs, obs_size)\n"
      "    if obs_size ~= 8 then error('obs_size is ' .. obs_size) end\n"
      "    if obs[4] ~= obs[0] then error('the stack starts with the first frame twice') end\n"
      "  end,\n");
  const auto issues = issues_of(path);
  EXPECT_TRUE(issues.empty()) << issues[0].str();
}

TEST(EnvWrappers, AWrapperThatDoesNotFitTheEnvIsRefusedAtLoad) {
  TempDir dir;
  // Pooling asked of a float observation is fine; a frame stack of 64 CartPoles too. A time
  // limit of 0 is not.
  const auto issues = issues_of(script_with_wrappers(dir, "{ ms.wrap.time_limit(0) }"));
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].message, "max_steps must be an integer in [1, 1000000000], got 0");
}

TEST(EnvWrappers, TheCommandLineSetsThemInTheWelcomesTextForm) {
  TempDir dir;
  const std::string path = script_with_wrappers(dir, "{ ms.wrap.frame_stack(4) }");
  const engine::ExperimentConfig c = load_experiment(path, {"env.wrappers=time_limit max_steps=9;frame_stack n=2"});
  EXPECT_EQ(c.env.wrappers, (envs::WrapperList{made("time_limit", {{"max_steps", 9}}), made("frame_stack", {{"n", 2}})}));
  EXPECT_TRUE(load_experiment(path, {"env.wrappers="}).env.wrappers.empty());
  const auto issues = issues_of(path, {"env.wrappers=frame_stack n=0"});
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].field, "env.wrappers");
  EXPECT_NE(issues[0].message.find("n must be an integer in [1, 64], got 0"), std::string::npos) << issues[0].message;
}

TEST(EnvWrappers, TheListWritesBackAsLuaAndJson) {
  const envs::WrapperList list = {made("frame_stack", {{"n", 4}}), made("clip_reward", {{"low", -0.5}})};
  EXPECT_EQ(engine::wrapper_list_lua(list),
            "{{kind = \"frame_stack\", n = 4}, {kind = \"clip_reward\", low = -0.5, high = 1}}");
  EXPECT_EQ(engine::wrapper_list_json(list),
            "[{\"kind\": \"frame_stack\", \"n\": 4}, {\"kind\": \"clip_reward\", \"low\": -0.5, \"high\": 1}]");
  const engine::FieldSchema* field = engine::find_field("env.wrappers");
  ASSERT_NE(field, nullptr);
  EXPECT_EQ(engine::check_value(*field, engine::FieldValue(envs::WrapperList{made("frame_stack", {{"n", 99}})})),
            "wrapper 1 (frame_stack): n must be an integer in [1, 64], got 99");
}

}  // namespace
}  // namespace moonseed::scripts
