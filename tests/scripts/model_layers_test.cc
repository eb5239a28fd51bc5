// Declared models in experiment scripts: model = ms.layers {...} and the
// presets, read by load_experiment with errors that point at the layer.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "engine/config/values.h"
#include "scripts/api/lua_layers.h"
#include "scripts/loader/experiment_loader.h"
#include "tests/scripts/loader_test_util.h"
#include "tests/scripts/temp_dir.h"

namespace moonseed::scripts {
namespace {

using testing::TempDir;
using testing::issues_of;

const char* const kHeader = "local ms = require 'moonseed'\n";

// Writes an experiment whose model section is `model` (starting on line 3).
std::string script_with_model(TempDir& dir, const std::string& model, const std::string& env = "CartPole-v1") {
  return dir.write("model.lua", std::string(kHeader) +
                                    "return ms.experiment {\n"                  // 2
                                    "  model = " + model + ",\n" +              // 3...
                                    "  env = { id = '" + env + "' },\n"
                                    "}\n");
}

TEST(DeclaredModel, LoadsTheLayersAsWrittenWithDefaultsFilledIn) {
  TempDir dir;
  const engine::ExperimentConfig c = load_experiment(script_with_model(
      dir, "ms.layers { ms.nn.linear(32), ms.nn.elu(), 'tanh', ms.nn.linear { out = 8 }, shared_torso = true }"));
  EXPECT_EQ(c.model.kind, "layers");
  EXPECT_TRUE(c.model.shared_torso);
  const models::LayerList expected = {{"linear", 32}, {"elu"}, {"tanh"}, {"linear", 8}};
  EXPECT_EQ(c.model.layers, expected);
}

TEST(DeclaredModel, TheLayersExampleLoadsItsDeclaredTorso) {
  const engine::ExperimentConfig c =
      load_experiment(std::string(MOONSEED_SOURCE_DIR) + "/examples/cartpole_layers.lua");
  EXPECT_EQ(c.model.kind, "layers");
  EXPECT_EQ(c.model.layers, (models::LayerList{{"linear", 64}, {"elu"}, {"linear", 64}, {"tanh"}}));
}

TEST(DeclaredModel, AnUnknownLayerKindPointsAtTheLayerAndSuggests) {
  TempDir dir;
  const std::string path = script_with_model(dir,
                                             "ms.layers {\n"                            // 3
                                             "    ms.nn.linear(32),\n"                  // 4
                                             "    { kind = 'lineer', out = 8 },\n"      // 5
                                             "  }");
  const auto issues = issues_of(path);
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].field, "model.layers[2]");
  EXPECT_EQ(issues[0].line, 3);  // a plain table records no line: the section's
  EXPECT_NE(issues[0].message.find("unknown layer kind \"lineer\"; did you mean \"linear\"?"), std::string::npos)
      << issues[0].message;
}

TEST(DeclaredModel, ABadParameterPointsAtTheHelperCallThatMadeTheLayer) {
  TempDir dir;
  const std::string path = script_with_model(dir,
                                             "ms.layers {\n"                            // 3
                                             "    ms.nn.linear(32),\n"                  // 4
                                             "    ms.nn.relu(),\n"                      // 5
                                             "    ms.nn.linear(0),\n"                   // 6
                                             "  }");
  const auto issues = issues_of(path);
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].file, path);
  EXPECT_EQ(issues[0].line, 6);
  EXPECT_EQ(issues[0].field, "model.layers[3]");
  EXPECT_NE(issues[0].message.find("needs out in [1, 65536], got 0"), std::string::npos) << issues[0].message;
}

TEST(DeclaredModel, AMisspelledLayerFieldIsNamedWithASuggestion) {
  TempDir dir;
  const auto issues = issues_of(script_with_model(dir, "ms.layers { ms.nn.linear(4), { kind = 'maxpool2d', kernal = 2 } }"));
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].field, "model.layers[2].kernal");
  EXPECT_NE(issues[0].message.find("did you mean \"kernel\"?"), std::string::npos) << issues[0].message;
}

TEST(DeclaredModel, ALayerWithParametersCannotBeWrittenAsAName) {
  TempDir dir;
  const auto issues = issues_of(script_with_model(dir, "ms.layers { 'linear' }"));
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_NE(issues[0].message.find("a linear layer has parameters"), std::string::npos) << issues[0].message;
}

TEST(DeclaredModel, AnLstmThatIsNotLastIsRefusedAtItsLine) {
  TempDir dir;
  const std::string path = script_with_model(dir,
                                             "ms.layers {\n"                            // 3
                                             "    ms.nn.lstm(64),\n"                    // 4
                                             "    ms.nn.linear(32),\n"                  // 5
                                             "  }");
  const auto issues = issues_of(path);
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].line, 4);
  EXPECT_NE(issues[0].message.find("an lstm must be the last layer"), std::string::npos) << issues[0].message;
}

TEST(DeclaredModel, AnLstmLastMakesARecurrentVtraceModel) {
  TempDir dir;
  const auto issues = issues_of(script_with_model(dir, "ms.layers { ms.nn.linear(32), ms.nn.lstm(16) }"));
  EXPECT_TRUE(issues.empty()) << issues[0].message;
}

TEST(DeclaredModel, LayersThatDoNotFitTheEnvsObservationAreRefusedNamingTheEnv) {
  TempDir dir;
  auto issues = issues_of(script_with_model(dir, "ms.layers { ms.nn.conv2d(16, 3), ms.nn.relu() }"));
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_NE(issues[0].message.find("layer 1 conv2d(16, kernel 3, stride 1): needs a [channels, height, width] "
                                   "input (its input is 4) (for CartPole-v1)"),
            std::string::npos)
      << issues[0].message;
  issues = issues_of(script_with_model(dir, "{ kind = 'nature_cnn' }"));
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_NE(issues[0].message.find("needs a [channels, height, width] input"), std::string::npos)
      << issues[0].message;
}

TEST(DeclaredModel, KindAndLayersMustAgree) {
  TempDir dir;
  auto issues = issues_of(script_with_model(dir, "{ kind = 'layers' }"));
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_NE(issues[0].message.find("model.layers is empty"), std::string::npos) << issues[0].message;
  issues = issues_of(script_with_model(dir, "{ layers = { { kind = 'linear', out = 4 } } }"));
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_NE(issues[0].message.find("model.kind is \"mlp\", which ignores it"), std::string::npos)
      << issues[0].message;
}

TEST(DeclaredModel, NotAListIsAnError) {
  TempDir dir;
  const auto issues = issues_of(script_with_model(dir, "{ kind = 'layers', layers = { first = 'relu' } }"));
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].field, "model.layers");
  EXPECT_NE(issues[0].message.find("expected a list of layers"), std::string::npos) << issues[0].message;
}

TEST(DeclaredModel, TheListWritesBackAsLuaAndJson) {
  const models::LayerList layers = {{"conv2d", 32, 8, 4, 1}, {"relu"}, {"maxpool2d", 0, 3, 2, 0}, {"flatten"}, {"linear", 16}};
  EXPECT_EQ(engine::layer_list_lua(layers),
            "{{kind = \"conv2d\", out = 32, kernel = 8, stride = 4, padding = 1}, \"relu\", "
            "{kind = \"maxpool2d\", kernel = 3, stride = 2, padding = 0}, \"flatten\", {kind = \"linear\", out = 16}}");
  EXPECT_EQ(engine::layer_list_json({{"linear", 16}, {"relu"}}), "[{\"kind\": \"linear\", \"out\": 16}, {\"kind\": \"relu\"}]");
  EXPECT_EQ(models::layer_list_problem(layers), "");
  EXPECT_EQ(models::layer_list_problem({{"lstm", 8}, {"relu"}}),
            "element 1 (lstm): an lstm must be the last layer (the heads read its output)");
}

}  // namespace
}  // namespace moonseed::scripts
