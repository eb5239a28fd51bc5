// env.plugin, a C env plugin (docs/env-plugins.md): resolved against the script's directory,
// described by a real `moonseed-actor describe-env` child at load time, its problems reported
// at env.plugin, kept by to_lua.
#include <stdlib.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "scripts/loader/experiment_loader.h"
#include "tests/scripts/loader_test_util.h"
#include "tests/scripts/temp_dir.h"

namespace moonseed::scripts {
namespace {

using testing::issues_of;
using testing::TempDir;

class EnvPlugin : public ::testing::Test {
 protected:
  void SetUp() override {
    ::setenv("MOONSEED_ACTOR_BINARY", MOONSEED_ACTOR_BINARY, 1);
    std::filesystem::create_directories(dir_.path() + "/exp/plugins");
    plugin_ = dir_.path() + "/exp/plugins/libprobe.so";
    std::filesystem::copy_file(MOONSEED_PROBE_PLUGIN, plugin_);
  }
  void TearDown() override { ::unsetenv("MOONSEED_ACTOR_BINARY"); }

  std::string script(const std::string& env_fields, const std::string& more = "") {
    return dir_.write("exp/run.lua", "return { env = { " + env_fields + " }, " + more + " }\n");
  }

  TempDir dir_;
  std::string plugin_;
};

void expect_contains(const std::string& text, const std::string& part) {
  EXPECT_NE(text.find(part), std::string::npos) << "\"" << part << "\" not in: " << text;
}

TEST_F(EnvPlugin, ARelativePathIsResolvedAgainstTheScriptAndItsIdNeedNotBeBuiltIn) {
  const engine::ExperimentConfig config =
      load_experiment(script("id = \"Probe-v0\", plugin = \"plugins/libprobe.so\", options = { obs_size = 3 }"));
  EXPECT_EQ(config.env.plugin, plugin_);
  EXPECT_EQ(config.env.id, "Probe-v0");
  // Written elsewhere (as a run directory keeps config.lua), it still names the same file.
  const engine::ExperimentConfig again = load_experiment(dir_.write("b/config.lua", to_lua(config)));
  EXPECT_EQ(again.env.plugin, plugin_);
}

TEST_F(EnvPlugin, AnOverrideIsResolvedAgainstTheScriptToo) {
  const std::string path = script("id = \"Probe-v0\"");
  EXPECT_EQ(load_experiment(path, {"env.plugin=\"plugins/libprobe.so\""}).env.plugin, plugin_);
}

TEST_F(EnvPlugin, AMissingFileIsAnIssueAtEnvPluginNamingThePath) {
  const std::vector<ConfigIssue> issues = issues_of(script("id = \"Probe-v0\", plugin = \"nowhere.so\""));
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].field, "env.plugin");
  expect_contains(issues[0].message, "plugin " + dir_.path() + "/exp/nowhere.so: no such file");
}

TEST_F(EnvPlugin, AnOptionThePluginRefusesIsAnIssueWithItsMessage) {
  const std::vector<ConfigIssue> issues =
      issues_of(script("id = \"Probe-v0\", plugin = \"plugins/libprobe.so\", options = { speed = 1 }"));
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].field, "env.plugin");
  EXPECT_EQ(issues[0].message, "plugin " + plugin_ + ": refused to create \"Probe-v0\": unknown option \"speed\"");
}

TEST_F(EnvPlugin, APluginThatCrashesWhileDescribedIsAnIssueNotACrash) {
  const std::vector<ConfigIssue> issues =
      issues_of(script("id = \"Probe-v0\", plugin = \"plugins/libprobe.so\", options = { crash_in_create = 1 }"));
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].field, "env.plugin");
  expect_contains(issues[0].message, "the plugin crashed: the process died of signal 11");
}

TEST_F(EnvPlugin, TheRewardShapingTrialSeesThePluginsFirstObservation) {
  // The probe's first observation is {0, 0.5, 0.5}: the trial fails only if it sees another.
  const std::string shaping =
      "reward_shaping = function(n, reward, obs) if obs[2] ~= 0.5 then error('obs[2] is ' .. obs[2]) end end";
  EXPECT_TRUE(issues_of(script("id = \"Probe-v0\", plugin = \"plugins/libprobe.so\", options = { obs_size = 3 }",
                               shaping))
                  .empty());
  const std::vector<ConfigIssue> issues = issues_of(script(
      "id = \"Probe-v0\", plugin = \"plugins/libprobe.so\", options = { obs_size = 3 }",
      "reward_shaping = function(n, reward, obs) if obs[0] ~= 1 then error('obs[0] is ' .. obs[0]) end end"));
  ASSERT_EQ(issues.size(), 1u);
  expect_contains(issues[0].message, "obs[0] is 0");
}

}  // namespace
}  // namespace moonseed::scripts
