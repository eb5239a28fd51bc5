// Recipes: `extends` chains, deep merge, where recipes are found, the shipped
// library, and the provenance of every Lua file a config came from.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "envs/env.h"
#include "engine/vtrace/config/vtrace_config.h"
#include "scripts/loader/experiment_loader.h"
#include "scripts/state/lua_state.h"
#include "scripts/loader/sha256.h"
#include "scripts/api/source_locator.h"
#include "tests/scripts/loader_test_util.h"
#include "tests/scripts/temp_dir.h"

namespace moonseed::scripts {
namespace {

using testing::TempDir;
using testing::issues_of;
using testing::sha256sum_of;

const std::string kSourceDir = MOONSEED_SOURCE_DIR;


std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}


// Sets MOONSEED_PATH (unset when empty) and the working directory for one
// test, and restores both when it ends: ./recipes is relative to the cwd.
class ScopedSearchEnvironment {
 public:
  ScopedSearchEnvironment(const std::string& moonseed_path, const std::string& cwd)
      : old_cwd_(std::filesystem::current_path()) {
    if (const char* old = std::getenv("MOONSEED_PATH")) old_path_ = old;
    had_path_ = std::getenv("MOONSEED_PATH") != nullptr;
    if (moonseed_path.empty()) {
      unsetenv("MOONSEED_PATH");
    } else {
      setenv("MOONSEED_PATH", moonseed_path.c_str(), 1);
    }
    std::filesystem::current_path(cwd);
  }
  ~ScopedSearchEnvironment() {
    std::filesystem::current_path(old_cwd_);
    if (had_path_) {
      setenv("MOONSEED_PATH", old_path_.c_str(), 1);
    } else {
      unsetenv("MOONSEED_PATH");
    }
  }

 private:
  std::filesystem::path old_cwd_;
  std::string old_path_;
  bool had_path_ = false;
};

TEST(Extends, PartialSectionInTheChildKeepsTheBasesOtherFields) {
  TempDir dir;
  dir.write("team/base.lua", "return {\n"
                             "  optimizer = { kind = 'rmsprop', lr = 1e-3, eps = 0.01 },\n"
                             "  learner = { batch = 8 },\n"
                             "}\n");
  const std::string script = dir.write("exp.lua", "return {\n"
                                                  "  extends = 'team.base',\n"
                                                  "  optimizer = { lr = 5e-4 },\n"
                                                  "}\n");
  const engine::ExperimentConfig c = load_experiment(script);
  EXPECT_EQ(c.optimizer.lr, 5e-4);
  EXPECT_EQ(c.optimizer.kind, "rmsprop");
  EXPECT_EQ(c.optimizer.eps, 0.01);
  EXPECT_EQ(c.learner.batch, 8);
  EXPECT_EQ(c.learner.unroll, engine::LearnerConfig{}.unroll);
}

TEST(Extends, ListInTheChildReplacesTheBasesListWhole) {
  TempDir dir;
  dir.write("base.lua", "return { model = { hidden = { 64, 64, 64 }, activation = 'relu' } }\n");
  const std::string script = dir.write("exp.lua", "return { extends = 'base', model = { hidden = { 32 } } }\n");
  const engine::ExperimentConfig c = load_experiment(script);
  EXPECT_EQ(c.model.hidden, (std::vector<int64_t>{32}));
  EXPECT_EQ(c.model.activation, "relu");
}

TEST(Extends, EnvOptionsMergeByKeyWithTheChildsValueWinning) {
  TempDir dir;
  dir.write("base.lua", "return { env = { id = 'CartPole-v1', options = { max_episode_steps = 100, "
                        "sutton_barto_reward = 1 } } }\n");
  const std::string script =
      dir.write("exp.lua", "return { extends = 'base', env = { options = { max_episode_steps = 50 } } }\n");
  const engine::ExperimentConfig c = load_experiment(script);
  EXPECT_EQ(c.env.options, (envs::EnvOptions{{"max_episode_steps", 50}, {"sutton_barto_reward", 1}}));
}

TEST(Extends, ChainOfThreeAppliesEachLevelOverTheOneBelow) {
  TempDir dir;
  dir.write("team/root.lua", "return { seed = 1, learner = { batch = 4, unroll = 10, queue_capacity = 8 } }\n");
  dir.write("team/mid.lua", "return { extends = 'team.root', seed = 2, learner = { unroll = 30 } }\n");
  const std::string script = dir.write("exp.lua", "return { extends = 'team.mid', learner = { batch = 64 } }\n");
  const engine::ExperimentConfig c = load_experiment(script);
  EXPECT_EQ(c.seed, 2u);
  EXPECT_EQ(c.learner.batch, 64);
  EXPECT_EQ(c.learner.unroll, 30);
  EXPECT_EQ(c.learner.queue_capacity, 8);
}

TEST(Extends, CycleIsReportedAtTheExtendsThatClosesItNamingTheChain) {
  TempDir dir;
  dir.write("a.lua", "return {\n  extends = 'b',\n}\n");
  const std::string b = dir.write("b.lua", "return {\n  seed = 3,\n  extends = 'a',\n}\n");
  const std::string script = dir.write("exp.lua", "return { extends = 'a' }\n");
  const auto issues = issues_of(script);
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].str(), b + ":3: extends: cycle of recipes: " + script + " -> a -> b -> a");
}

TEST(Extends, MissingRecipeNamesTheLineAndEveryFileTried) {
  TempDir dir;
  ScopedSearchEnvironment env(dir.path() + "/shared", dir.path());
  const std::string script = dir.write("exp/exp.lua", "return {\n  seed = 2,\n  extends = 'team.nope',\n}\n");
  const auto issues = issues_of(script);
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].file, script);
  EXPECT_EQ(issues[0].line, 3);
  EXPECT_EQ(issues[0].field, "extends");
  const std::string& m = issues[0].message;
  EXPECT_EQ(m.rfind("recipe \"team.nope\" not found; tried:", 0), 0u) << m;
  for (const std::string& tried :
       {dir.path() + "/exp/team/nope.lua", dir.path() + "/exp/team/nope/init.lua", std::string("recipes/team/nope.lua"),
        dir.path() + "/shared/team/nope.lua", std::string("no module 'team.nope' in the engine's Lua library")}) {
    EXPECT_NE(m.find(tried), std::string::npos) << tried << " in " << m;
  }
  EXPECT_EQ(m.find("stack traceback"), std::string::npos) << m;
}

TEST(Extends, ValueThatIsNotAStringIsAnErrorAtItsLine) {
  TempDir dir;
  const std::string script = dir.write("exp.lua", "return {\n  extends = { 'base' },\n}\n");
  const auto issues = issues_of(script);
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].str(),
            script + ":2: extends: expected a string naming a recipe module like \"team.recipe\", got table");
}

TEST(Extends, RecipeThatReturnsNoTableIsAnErrorAtTheExtendsLine) {
  TempDir dir;
  dir.write("base.lua", "return 42\n");
  const std::string script = dir.write("exp.lua", "return {\n  extends = 'base',\n}\n");
  const auto issues = issues_of(script);
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].str(), script + ":2: extends: recipe \"base\" must return an experiment table, got number 42");
}

TEST(Extends, UnknownKeyInsideARecipeReportsTheRecipesFileAndLine) {
  TempDir dir;
  const std::string base = dir.write("team/base.lua", "local ms = require 'moonseed'\n"
                                                      "return ms.experiment {\n"
                                                      "  optimizer = {\n"
                                                      "    lrr = 1e-3,\n"  // 4
                                                      "  },\n"
                                                      "}\n");
  const std::string script = dir.write("exp.lua", "return { extends = 'team.base' }\n");
  const auto issues = issues_of(script);
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].str(), base + ":4: optimizer.lrr: unknown field; did you mean 'optimizer.lr'?");
}

TEST(Extends, OutOfRangeValueLeftByARecipeReportsTheRecipesLine) {
  TempDir dir;
  const std::string base = dir.write("base.lua", "return {\n  vtrace = {\n    gamma = 1.5,\n  },\n}\n");
  const std::string script = dir.write("exp.lua", "return { extends = 'base', seed = 4 }\n");
  const auto issues = issues_of(script);
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].str(), base + ":3: vtrace.gamma: expected a number in [0, 1], got 1.5");
}

TEST(Extends, OutOfRangeValueInARecipeIsFineWhenTheChildReplacesIt) {
  TempDir dir;
  dir.write("base.lua", "return { vtrace = { gamma = 1.5 } }\n");
  const std::string script = dir.write("exp.lua", "return { extends = 'base', vtrace = { gamma = 0.9 } }\n");
  EXPECT_EQ(load_experiment(script).section<engine::VTraceConfig>().gamma, 0.9);
}

TEST(Extends, WrongTypeInTheChildReportsTheChildsLine) {
  TempDir dir;
  dir.write("base.lua", "return {\n  optimizer = { lr = 1e-3 },\n}\n");
  const std::string script = dir.write("exp.lua", "return {\n"
                                                  "  extends = 'base',\n"
                                                  "  optimizer = {\n"
                                                  "    lr = 'fast',\n"  // 4
                                                  "  },\n"
                                                  "}\n");
  const auto issues = issues_of(script);
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].str(), script + ":4: optimizer.lr: expected a number, got string \"fast\"");
}

TEST(Extends, RuntimeErrorInARecipeIsAScriptErrorAtTheRecipesLine) {
  TempDir dir;
  const std::string base = dir.write("base.lua", "local x = 1\nerror('broken recipe')\n");
  const std::string script = dir.write("exp.lua", "return { extends = 'base' }\n");
  try {
    load_experiment(script);
    FAIL() << "loaded a script whose recipe raises an error";
  } catch (const ScriptError& e) {
    EXPECT_NE(std::string(e.what()).find(base + ":2: broken recipe"), std::string::npos) << e.what();
  }
}

TEST(Extends, CommandLineOverridesBeatTheScriptAndTheRecipe) {
  TempDir dir;
  dir.write("base.lua", "return { optimizer = { lr = 1e-3 }, learner = { batch = 8 }, "
                        "env = { options = { max_episode_steps = 100 } } }\n");
  const std::string script = dir.write("exp.lua", "return { extends = 'base', optimizer = { lr = 5e-4 } }\n");
  const engine::ExperimentConfig c =
      load_experiment(script, {"optimizer.lr=3e-4", "learner.batch=2", "env.options.max_episode_steps=7"});
  EXPECT_EQ(c.optimizer.lr, 3e-4);
  EXPECT_EQ(c.learner.batch, 2);
  EXPECT_EQ(c.env.options, (envs::EnvOptions{{"max_episode_steps", 7}}));
}

// The three places a recipe can live, each holding a different seed.
class RecipeSearchOrder : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_.write("work/recipes/team/r.lua", "return { seed = 20 }\n");
    dir_.write("shared/team/r.lua", "return { seed = 30 }\n");
    script_ = dir_.write("exp/exp.lua", "return { extends = 'team.r' }\n");
  }
  uint64_t seed_loaded() {
    ScopedSearchEnvironment env(dir_.path() + "/nothing-here:" + dir_.path() + "/shared", dir_.path() + "/work");
    return load_experiment(script_).seed;
  }
  TempDir dir_;
  std::string script_;
};

TEST_F(RecipeSearchOrder, TheScriptsOwnDirectoryComesFirst) {
  dir_.write("exp/team/r.lua", "return { seed = 10 }\n");
  EXPECT_EQ(seed_loaded(), 10u);
}

TEST_F(RecipeSearchOrder, DotSlashRecipesComesBeforeMoonseedPath) { EXPECT_EQ(seed_loaded(), 20u); }

TEST_F(RecipeSearchOrder, MoonseedPathIsSearchedWhenNoOtherDirectoryHasTheRecipe) {
  std::filesystem::remove_all(dir_.path() + "/work/recipes");
  EXPECT_EQ(seed_loaded(), 30u);
}

TEST_F(RecipeSearchOrder, MoonseedPathShadowsTheEnginesLibrary) {
  dir_.write("shared/moonseed/recipes/classic_vtrace.lua", "return { seed = 40 }\n");
  dir_.write("exp/shadow.lua", "return { extends = 'moonseed.recipes.classic_vtrace' }\n");
  ScopedSearchEnvironment env(dir_.path() + "/shared", dir_.path() + "/work");
  EXPECT_EQ(load_experiment(dir_.path() + "/exp/shadow.lua").seed, 40u);
}

TEST(ShippedRecipes, ClassicVtraceLoadsFromTheEnginesLibrary) {
  TempDir dir;
  const std::string script = dir.write("exp.lua", "return { extends = 'moonseed.recipes.classic_vtrace' }\n");
  const engine::ExperimentConfig c = load_experiment(script);
  EXPECT_EQ(c.name, "classic_vtrace");
  EXPECT_EQ(c.optimizer.kind, "rmsprop");
  EXPECT_EQ(c.model.hidden, (std::vector<int64_t>{64, 64}));
}

TEST(ShippedRecipes, CartpoleRecipeResolvesToTheCartpoleExample) {
  TempDir dir;
  const std::string script = dir.write("exp.lua", "return { extends = 'moonseed.recipes.cartpole_vtrace' }\n");
  const std::string from_recipe = to_lua(load_experiment(script));
  const std::string example = to_lua(load_experiment(kSourceDir + "/examples/cartpole_vtrace.lua"));
  EXPECT_EQ(from_recipe, example);
}

TEST(ShippedRecipes, TheExampleOverridesTwoFieldsOfTheCartpoleRecipe) {
  const engine::ExperimentConfig example = load_experiment(kSourceDir + "/examples/cartpole_from_recipe.lua");
  engine::ExperimentConfig expected = load_experiment(kSourceDir + "/examples/cartpole_vtrace.lua");
  expected.name = "cartpole_from_recipe";
  expected.stop.seconds = 300;
  EXPECT_EQ(to_lua(example), to_lua(expected));
}

TEST(ShippedRecipes, AcrobotRecipeSetsItsEnvAndThresholdOverTheBase) {
  TempDir dir;
  const std::string script = dir.write("exp.lua", "return { extends = 'moonseed.recipes.acrobot_vtrace' }\n");
  const engine::ExperimentConfig c = load_experiment(script);
  EXPECT_EQ(c.env.id, "Acrobot-v1");
  EXPECT_EQ(c.stop.return_mean, -100);
  EXPECT_EQ(c.stop.seconds, 120);
  EXPECT_EQ(c.optimizer.kind, "rmsprop");
}

TEST(ShippedRecipes, LinesOfAShippedRecipeAreFoundInTheTextBuiltIntoTheBinary) {
  // Errors in an embedded recipe name "[moonseed]/moonseed/recipes/x.lua:LINE".
  const std::string path = "[moonseed]/moonseed/recipes/cartpole_vtrace.lua";
  const std::string text = file_bytes(kSourceDir + "/scripts/lua/moonseed/recipes/cartpole_vtrace.lua");
  std::istringstream lines(text);
  std::string line;
  int env_line = 0;
  for (int n = 1; env_line == 0 && std::getline(lines, line); ++n) {
    if (line.find("env = {") != std::string::npos) env_line = n;
  }
  ASSERT_GT(env_line, 0);
  SourceLocator locator;
  const std::optional<SourceLocator::Anchor> table = locator.returned_constructor(path);
  ASSERT_TRUE(table.has_value());
  const std::optional<SourceLocator::KeyPlace> env = locator.find_key(*table, "env");
  ASSERT_TRUE(env.has_value());
  EXPECT_EQ(env->line, env_line);
}

class Provenance : public ::testing::Test {
 protected:
  void SetUp() override {
    script_ = dir_.write("exp.lua", "local ms = require 'moonseed'\n"
                                    "return ms.experiment { extends = 'team.base', seed = 5 }\n");
    base_ = dir_.write("team/base.lua", "-- base\nreturn { extends = 'team.root', learner = { batch = 8 } }\n");
    root_ = dir_.write("team/root.lua", "return { learner = { unroll = 10 } }\n");
  }
  TempDir dir_;
  std::string script_, base_, root_;
};

TEST_F(Provenance, ListsTheScriptFirstThenEveryFileInLoadOrderOnce) {
  const LoadedExperiment loaded = load_experiment_sources(script_);
  EXPECT_EQ(loaded.config.learner.batch, 8);
  std::vector<std::string> files;
  for (const ScriptSource& s : loaded.sources) {
    if (!s.embedded) files.push_back(s.path);
  }
  EXPECT_EQ(files, (std::vector<std::string>{script_, base_, root_}));
  ASSERT_FALSE(loaded.sources.empty());
  EXPECT_EQ(loaded.sources[0].path, script_);
  for (size_t i = 0; i < loaded.sources.size(); ++i) {
    for (size_t j = i + 1; j < loaded.sources.size(); ++j) EXPECT_NE(loaded.sources[i].path, loaded.sources[j].path);
  }
}

TEST_F(Provenance, DigestsMatchTheFileBytesAndSha256sum) {
  const LoadedExperiment loaded = load_experiment_sources(script_);
  size_t files = 0;
  for (const ScriptSource& s : loaded.sources) {
    if (s.embedded) continue;
    ++files;
    EXPECT_EQ(s.text, file_bytes(s.path));
    EXPECT_EQ(s.sha256, sha256_hex(file_bytes(s.path))) << s.path;
    EXPECT_EQ(s.sha256, sha256sum_of(s.path)) << s.path;
  }
  EXPECT_EQ(files, 3u);
}

TEST_F(Provenance, EmbeddedLibraryFilesAreListedUnderTheirLibraryPath) {
  const LoadedExperiment loaded = load_experiment_sources(script_);
  const auto init = std::find_if(loaded.sources.begin(), loaded.sources.end(),
                                 [](const ScriptSource& s) { return s.path == "[moonseed]/moonseed/init.lua"; });
  ASSERT_NE(init, loaded.sources.end());
  EXPECT_TRUE(init->embedded);
  EXPECT_EQ(init->text, file_bytes(kSourceDir + "/scripts/lua/moonseed/init.lua"));
  EXPECT_EQ(init->sha256, sha256_hex(init->text));
}

TEST_F(Provenance, ShippedRecipesAreListedAsEmbeddedFiles) {
  const LoadedExperiment loaded = load_experiment_sources(kSourceDir + "/examples/cartpole_from_recipe.lua");
  std::vector<std::string> recipes;
  for (const ScriptSource& s : loaded.sources) {
    if (s.path.find("/recipes/") != std::string::npos) recipes.push_back(s.path);
  }
  EXPECT_EQ(recipes, (std::vector<std::string>{"[moonseed]/moonseed/recipes/cartpole_vtrace.lua",
                                               "[moonseed]/moonseed/recipes/classic_vtrace.lua"}));
}

TEST(SourcesManifest, WritesOneSha256sumLinePerSource) {
  const std::vector<ScriptSource> sources = {
      {"exp.lua", std::string(64, 'a'), "", false},
      {"[moonseed]/moonseed/init.lua", std::string(64, 'b'), "", true},
  };
  EXPECT_EQ(sources_manifest(sources), std::string(64, 'a') + "  exp.lua\n" + std::string(64, 'b') +
                                           "  [moonseed]/moonseed/init.lua\n");
}

TEST(SourcesManifest, IsAcceptedBySha256sumCheck) {
  TempDir dir;
  ScopedSearchEnvironment env("", dir.path());
  const std::string weird = "odd\\name\nwith newline.lua";
  std::vector<ScriptSource> sources;
  for (const std::string& name : {std::string("exp.lua"), std::string("team/base.lua"), weird}) {
    const std::string text = "return { seed = " + std::to_string(name.size()) + " }\n";
    dir.write(name, text);
    sources.push_back(ScriptSource{name, sha256_hex(text), text, false});
  }
  const std::string manifest = sources_manifest(sources);
  EXPECT_NE(manifest.find("\n\\" + sources[2].sha256 + "  odd\\\\name\\nwith newline.lua\n"), std::string::npos)
      << manifest;
  dir.write("SHA256SUMS", manifest);
  EXPECT_EQ(std::system("sha256sum --quiet -c SHA256SUMS"), 0);
  dir.write("team/base.lua", "return { seed = 99 }\n");
  EXPECT_NE(std::system("sha256sum --quiet -c SHA256SUMS >/dev/null 2>&1"), 0) << "a changed file fails the check";
}

}  // namespace
}  // namespace moonseed::scripts
