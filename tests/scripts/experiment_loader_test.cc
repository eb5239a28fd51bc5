#include "scripts/loader/experiment_loader.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "engine/vtrace/config/vtrace_config.h"
#include "envs/env.h"
#include "engine/config/schema.h"
#include "scripts/state/lua_state.h"
#include "tests/engine/config/all_fields_config.h"
#include "tests/scripts/loader_test_util.h"
#include "tests/scripts/temp_dir.h"

namespace moonseed::scripts {
namespace {

using testing::TempDir;
using testing::issues_of;


const char* const kHeader = "local ms = require 'moonseed'\n";

TEST(LoadExperiment, LoadsTheCartpoleExample) {
  const engine::ExperimentConfig c =
      load_experiment(std::string(MOONSEED_SOURCE_DIR) + "/examples/cartpole_vtrace.lua");
  EXPECT_EQ(c.env.id, "CartPole-v1");
  EXPECT_EQ(c.model.hidden, (std::vector<int64_t>{64, 64}));
  EXPECT_EQ(c.model.activation, "tanh");
  EXPECT_EQ(c.section<engine::VTraceConfig>().gamma, 0.99);
  EXPECT_EQ(c.section<engine::VTraceConfig>().entropy_cost, 0.01);
  EXPECT_EQ(c.optimizer.kind, "rmsprop");
  EXPECT_EQ(c.optimizer.lr, 1e-3);
  EXPECT_EQ(c.optimizer.eps, 0.01);
  EXPECT_EQ(c.learner.batch, 16);
  EXPECT_EQ(c.learner.queue_capacity, 16);
  EXPECT_EQ(c.learner.unroll, 20);
  EXPECT_EQ(c.topology.actors, 2);
  EXPECT_EQ(c.topology.envs_per_actor, 32);
  EXPECT_EQ(c.inference.max_batch, 64);
  EXPECT_EQ(c.inference.deadline_us, 500);
  EXPECT_EQ(c.stop.return_mean, 475);
  EXPECT_EQ(c.stop.seconds, 120);
  EXPECT_EQ(c.log.interval_s, 0.25);
}

TEST(LoadExperiment, AcceptsAPlainTableAndKeepsDefaultsForFieldsNotGiven) {
  TempDir dir;
  const std::string path = dir.write("plain.lua", "return { seed = 7, learner = { batch = 4 } }\n");
  const engine::ExperimentConfig c = load_experiment(path);
  EXPECT_EQ(c.seed, 7u);
  EXPECT_EQ(c.learner.batch, 4);
  EXPECT_EQ(c.learner.unroll, engine::LearnerConfig{}.unroll);
}

TEST(LoadExperiment, UnknownKeyNamesFileLineAndSuggestsTheClosestField) {
  TempDir dir;
  const std::string path = dir.write("typo.lua", std::string(kHeader) +
                                                     "return ms.experiment {\n"   // 2
                                                     "  optimizer = {\n"          // 3
                                                     "    lrr = 1e-3,\n"          // 4
                                                     "  },\n"
                                                     "}\n");
  try {
    load_experiment(path);
    FAIL() << "loaded a script with an unknown key";
  } catch (const ConfigError& e) {
    ASSERT_EQ(e.issues().size(), 1u) << e.what();
    EXPECT_EQ(e.issues()[0].line, 4);
    EXPECT_EQ(e.issues()[0].field, "optimizer.lrr");
    EXPECT_NE(std::string(e.what()).find(path + ":4: optimizer.lrr: unknown field; did you mean 'optimizer.lr'?"),
              std::string::npos)
        << e.what();
  }
}

TEST(LoadExperiment, MisspelledNestedKeyIsAnErrorNotASilentDefault) {
  TempDir dir;
  const std::string path = dir.write("nested.lua", std::string(kHeader) +
                                                       "return ms.experiment {\n"
                                                       "  model = ms.mlp {\n"             // 3
                                                       "    activation = 'relu',\n"       // 4
                                                       "    hiden = {128, 128},\n"        // 5
                                                       "  },\n"
                                                       "}\n");
  const auto issues = issues_of(path);
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].field, "model.hiden");
  EXPECT_EQ(issues[0].line, 5);
  EXPECT_NE(issues[0].message.find("did you mean 'model.hidden'?"), std::string::npos);
}

TEST(LoadExperiment, MisspelledSectionIsAnError) {
  TempDir dir;
  const std::string path = dir.write("section.lua", "return {\n  optimiser = { lr = 1e-3 },\n}\n");
  const auto issues = issues_of(path);
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].str(), path + ":2: optimiser: unknown field; did you mean 'optimizer'?");
}

TEST(LoadExperiment, WrongTypeNamesTheFieldTheExpectedTypeAndTheValueGot) {
  TempDir dir;
  const std::string path = dir.write("type.lua", std::string(kHeader) +
                                                     "return ms.experiment {\n"
                                                     "  optimizer = { lr = 'fast' },\n"  // 3
                                                     "}\n");
  const auto issues = issues_of(path);
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].str(), path + ":3: optimizer.lr: expected a number, got string \"fast\"");
}

TEST(LoadExperiment, OutOfRangeNamesTheRange) {
  TempDir dir;
  const std::string path = dir.write("range.lua", std::string(kHeader) +
                                                      "return ms.experiment {\n"
                                                      "  vtrace = ms.vtrace {\n"
                                                      "    gamma = 1.5,\n"  // 4
                                                      "  },\n"
                                                      "}\n");
  const auto issues = issues_of(path);
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].str(), path + ":4: vtrace.gamma: expected a number in [0, 1], got 1.5");
}

TEST(LoadExperiment, IntegerFieldRejectsAFraction) {
  TempDir dir;
  const std::string path = dir.write("int.lua", "return {\n  learner = {\n    batch = 2.5,\n  },\n}\n");
  const auto issues = issues_of(path);
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].str(), path + ":3: learner.batch: expected an integer, got number 2.5");
}

TEST(LoadExperiment, ReportsEveryProblemSortedByLine) {
  TempDir dir;
  const std::string path = dir.write("many.lua",
                                     "return {\n"
                                     "  seed = -1,\n"                            // 2
                                     "  model = { activation = 'tahn' },\n"      // 3
                                     "  learner = { unroll = 'long' },\n"        // 4
                                     "}\n");
  const auto issues = issues_of(path);
  ASSERT_EQ(issues.size(), 3u);
  EXPECT_EQ(issues[0].line, 2);
  EXPECT_EQ(issues[1].line, 3);
  EXPECT_NE(issues[1].message.find("did you mean \"tanh\"?"), std::string::npos);
  EXPECT_EQ(issues[2].line, 4);
}

TEST(LoadExperiment, FindsLinesWhenTheExperimentIsBuiltBeforeItIsReturned) {
  TempDir dir;
  const std::string path = dir.write("built.lua", std::string(kHeader) +
                                                      "local e = ms.experiment {\n"     // 2
                                                      "  learner = {\n"                 // 3
                                                      "    unroll = 0,\n"               // 4
                                                      "  },\n"
                                                      "}\n"
                                                      "e.seed = 3\n"
                                                      "return e\n");
  const auto issues = issues_of(path);
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].str(), path + ":4: learner.unroll: expected an integer in [1, 100000], got 0");
}

TEST(LoadExperiment, SectionGivenAsANonTableIsAnError) {
  TempDir dir;
  const std::string path = dir.write("notable.lua", "return { optimizer = 3 }\n");
  const auto issues = issues_of(path);
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].field, "optimizer");
  EXPECT_NE(issues[0].message.find("expected a table"), std::string::npos);
}

TEST(LoadExperiment, ErrorInASectionBuiltByARecipePointsAtTheRecipe) {
  TempDir dir;
  dir.write("presets.lua", std::string(kHeader) +
                               "local M = {}\n"
                               "function M.small()\n"
                               "  local model = ms.mlp {\n"   // 4
                               "    hidden = {32},\n"
                               "    activaton = 'relu',\n"     // 6
                               "  }\n"
                               "  return model\n"
                               "end\n"
                               "return M\n");
  const std::string path = dir.write("exp.lua", std::string(kHeader) +
                                                    "local presets = require 'presets'\n"
                                                    "return ms.experiment { model = presets.small() }\n");
  const auto issues = issues_of(path);
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].file, dir.path() + "/presets.lua");
  EXPECT_EQ(issues[0].line, 6);
  EXPECT_EQ(issues[0].field, "model.activaton");
}

TEST(LoadExperiment, ScriptThatReturnsNoTableIsAnError) {
  TempDir dir;
  const std::string path = dir.write("nothing.lua", "local x = 1\n");
  const auto issues = issues_of(path);
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_NE(issues[0].message.find("must return a table"), std::string::npos);
}

TEST(LoadExperiment, ScriptRuntimeErrorIsAScriptErrorWithFileAndLine) {
  TempDir dir;
  const std::string path = dir.write("boom.lua", "local x = 1\nerror('boom')\n");
  try {
    load_experiment(path);
    FAIL() << "no error";
  } catch (const ScriptError& e) {
    EXPECT_NE(std::string(e.what()).find(path + ":2: boom"), std::string::npos) << e.what();
  }
}

TEST(LoadExperiment, UnknownEnvironmentIsAnErrorWithASuggestion) {
  TempDir dir;
  const std::string path = dir.write("env.lua", "return {\n  env = { id = 'CartPole-v2' },\n}\n");
  const auto issues = issues_of(path);
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].line, 2);
  EXPECT_NE(issues[0].message.find("did you mean \"CartPole-v1\"?"), std::string::npos) << issues[0].message;
}

TEST(LoadExperiment, UnknownEnvOptionIsAnError) {
  TempDir dir;
  const std::string path = dir.write("opt.lua", "return {\n  env = { options = { no_such_option = 1 } },\n}\n");
  const auto issues = issues_of(path);
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].field, "env.options");
  EXPECT_NE(issues[0].message.find("no_such_option"), std::string::npos) << issues[0].message;
}

TEST(LoadExperiment, MoreGroupsThanEnvsPerActorIsAnError) {
  TempDir dir;
  const std::string path = dir.write("groups.lua", "return { topology = { envs_per_actor = 2, groups_per_actor = 3 } }\n");
  const auto issues = issues_of(path);
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].field, "topology.groups_per_actor");
}

TEST(LoadExperiment, MoreLocalActorsThanActorsIsAnError) {
  TempDir dir;
  const std::string path = dir.write("local.lua", "return { topology = { actors = 2, local_actors = 3 } }\n");
  const auto issues = issues_of(path);
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].field, "topology.local_actors");
}

// V-trace has evaluation envs too (they once were R2D2's alone): the example with one per actor,
// greedy, and a stop on their return loads; all envs evaluating does not.
TEST(LoadExperiment, VtraceAcceptsEvaluationEnvsAndEvalGreedy) {
  const std::string example = std::string(MOONSEED_SOURCE_DIR) + "/examples/cartpole_vtrace.lua";
  const engine::ExperimentConfig c = load_experiment(
      example, {"topology.eval_envs_per_actor=1", "vtrace.eval_greedy=true", "stop.eval_return_mean=400"});
  EXPECT_EQ(c.algo, "vtrace");
  EXPECT_EQ(c.topology.eval_envs_per_actor, 1);
  EXPECT_TRUE(c.section<engine::VTraceConfig>().eval_greedy);
  EXPECT_EQ(c.stop.eval_return_mean, 400);
  EXPECT_FALSE(engine::ExperimentConfig{}.section<engine::VTraceConfig>().eval_greedy);  // sampled by default

  auto issues = issues_of(example, {"topology.envs_per_actor=2", "topology.groups_per_actor=1",
                                    "topology.eval_envs_per_actor=2"});
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].field, "topology.eval_envs_per_actor");
  EXPECT_NE(issues[0].message.find("eval_envs_per_actor (2) must be below envs_per_actor (2): some envs must train"),
            std::string::npos)
      << issues[0].message;
  issues = issues_of(example, {"vtrace.eval_greedy=3"});
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].field, "vtrace.eval_greedy");
}

class Overrides : public ::testing::Test {
 protected:
  TempDir dir_;
  std::string script_ = dir_.write("base.lua", "return { optimizer = { lr = 1e-3 }, topology = { actors = 2 } }\n");
};

TEST_F(Overrides, ReplaceTheScriptsValuesTypedByTheSchema) {
  const engine::ExperimentConfig c = load_experiment(
      script_, {"optimizer.lr=3e-4", "topology.actors=4", "model.hidden=128,128", "log.progress=false",
                "optimizer.kind=rmsprop", "env.options.max_episode_steps=200"});
  EXPECT_EQ(c.optimizer.lr, 3e-4);
  EXPECT_EQ(c.topology.actors, 4);
  EXPECT_EQ(c.model.hidden, (std::vector<int64_t>{128, 128}));
  EXPECT_FALSE(c.log.progress);
  EXPECT_EQ(c.optimizer.kind, "rmsprop");
  EXPECT_EQ(c.env.options, (envs::EnvOptions{{"max_episode_steps", 200}}));
}

TEST_F(Overrides, UnknownFieldIsRejectedWithASuggestionFromTheCommandLine) {
  const auto issues = issues_of(script_, {"optimizer.lrr=3e-4"});
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].file, "command line");
  EXPECT_EQ(issues[0].str(),
            "command line: optimizer.lrr: unknown field; did you mean 'optimizer.lr'? (in override "
            "'optimizer.lrr=3e-4')");
}

TEST_F(Overrides, AnUnknownFieldNamesWhatItsSectionHasOrTheNameOtherLibrariesGiveIt) {
  // Another library's name for the field: the same suggestion a script gets.
  auto issues = issues_of(script_, {"optimizer.learning_rate=1e-3"});
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].message, "unknown field; did you mean 'optimizer.lr'? (in override 'optimizer.learning_rate=1e-3')");
  issues = issues_of(script_, {"vtrace.discount=0.9"});
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].message, "unknown field; did you mean 'vtrace.gamma'? (in override 'vtrace.discount=0.9')");
  // Nothing close: the section's fields, as a script's reader lists them.
  issues = issues_of(script_, {"optimizer.zzzzzz=1"});
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].message.rfind("unknown field; optimizer has: kind, lr, ", 0), 0u) << issues[0].message;
}

TEST_F(Overrides, ValueOfTheWrongTypeIsRejected) {
  const auto issues = issues_of(script_, {"topology.actors=2.5"});
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].field, "topology.actors");
  EXPECT_NE(issues[0].message.find("expected an integer, got '2.5'"), std::string::npos);
}

TEST_F(Overrides, ValueOutOfRangeIsRejected) {
  const auto issues = issues_of(script_, {"vtrace.gamma=2"});
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].str(), "command line: vtrace.gamma: expected a number in [0, 1], got 2");
}

TEST_F(Overrides, WithoutAnEqualsSignIsRejected) {
  EXPECT_EQ(issues_of(script_, {"optimizer.lr"}).size(), 1u);
  EXPECT_EQ(issues_of(script_, {"optimizer=1"}).size(), 1u) << "a section is not a field";
}

TEST(ToLua, RoundTripsEveryFieldThroughLoadExperiment) {
  TempDir dir;
  const engine::ExperimentConfig original = test::config_with_every_field_changed();
  const std::string path = dir.write("config.lua", to_lua(original));
  const engine::ExperimentConfig loaded = load_experiment(path);
  EXPECT_EQ(engine::changed_fields(original, loaded), std::vector<std::string>{}) << to_lua(original);
  EXPECT_EQ(to_lua(loaded), to_lua(original));
}

TEST(ToLua, RoundTripsTheDefaults) {
  TempDir dir;
  const std::string path = dir.write("config.lua", to_lua(engine::ExperimentConfig{}));
  EXPECT_TRUE(engine::changed_fields(engine::ExperimentConfig{}, load_experiment(path)).empty());
}

}  // namespace
}  // namespace moonseed::scripts
