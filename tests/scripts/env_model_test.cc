// env.model, the model file an env loads (docs/envs-mujoco.md): resolved against the script's
// directory, checked by loading it, refused for envs that read none, and kept by to_lua.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "scripts/loader/experiment_loader.h"
#include "tests/scripts/loader_test_util.h"
#include "tests/scripts/temp_dir.h"

namespace moonseed::scripts {
namespace {

using testing::issues_of;
using testing::TempDir;

std::string pendulum_mjcf() {
  std::ifstream in(MOONSEED_SOURCE_DIR "/envs/mujoco/models/inverted_pendulum.xml");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string script_with_model(const std::string& id, const std::string& model) {
  return "return { env = { id = \"" + id + "\", model = \"" + model + "\" } }\n";
}

TEST(EnvModel, ARelativePathIsResolvedAgainstTheScriptsDirectory) {
  TempDir dir;
  const std::string model = dir.write("experiments/robots/pendulum.xml", pendulum_mjcf());
  const std::string script = dir.write("experiments/walk.lua", script_with_model("MuJoCo/Model-v0", "robots/pendulum.xml"));
  const engine::ExperimentConfig config = load_experiment(script);
  EXPECT_EQ(config.env.model, model);
  EXPECT_TRUE(std::filesystem::path(config.env.model).is_absolute());
}

TEST(EnvModel, AnOverrideIsResolvedAgainstTheScriptsDirectoryToo) {
  TempDir dir;
  const std::string model = dir.write("exp/other.xml", pendulum_mjcf());
  const std::string script = dir.write("exp/walk.lua", "return { env = { id = \"MuJoCo/Model-v0\" } }\n");
  EXPECT_EQ(load_experiment(script, {"env.model=other.xml"}).env.model, model);
}

TEST(EnvModel, AMissingFileIsAnIssueAtEnvModelNamingThePath) {
  TempDir dir;
  const std::string script = dir.write("walk.lua", script_with_model("MuJoCo/Model-v0", "nowhere.xml"));
  const std::vector<ConfigIssue> issues = issues_of(script);
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].field, "env.model");
  EXPECT_NE(issues[0].message.find(dir.path() + "/nowhere.xml"), std::string::npos) << issues[0].message;
}

TEST(EnvModel, AnInvalidModelIsAnIssueWithMujocosMessage) {
  TempDir dir;
  dir.write("bad.xml", "<mujoco><worldbody><bogus/></worldbody></mujoco>\n");
  const std::string script = dir.write("walk.lua", script_with_model("MuJoCo/Model-v0", "bad.xml"));
  const std::vector<ConfigIssue> issues = issues_of(script);
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_NE(issues[0].message.find("bogus"), std::string::npos) << issues[0].message;
  EXPECT_NE(issues[0].message.find(dir.path() + "/bad.xml"), std::string::npos) << issues[0].message;
}

TEST(EnvModel, AnEnvThatReadsNoModelRefusesOne) {
  TempDir dir;
  dir.write("pendulum.xml", pendulum_mjcf());
  const std::string script = dir.write("cartpole.lua", script_with_model("CartPole-v1", "pendulum.xml"));
  const std::vector<ConfigIssue> issues = issues_of(script);
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].field, "env.model");
  EXPECT_NE(issues[0].message.find("reads no model file"), std::string::npos) << issues[0].message;
}

TEST(EnvModel, ToLuaKeepsTheResolvedPath) {
  TempDir dir;
  const std::string model = dir.write("a/pendulum.xml", pendulum_mjcf());
  const engine::ExperimentConfig config =
      load_experiment(dir.write("a/walk.lua", script_with_model("MuJoCo/Model-v0", "pendulum.xml")));
  // Written elsewhere (as a run directory keeps config.lua), it still names the same file.
  const engine::ExperimentConfig again = load_experiment(dir.write("b/c/config.lua", to_lua(config)));
  EXPECT_EQ(again.env.model, model);
}

}  // namespace
}  // namespace moonseed::scripts
