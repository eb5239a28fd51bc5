// env.python, a Python env factory (docs/python-actors.md): validated as MODULE:FUNCTION, its
// module path is the script's directory then env.python_path resolved against it, described by a
// real Python child at load time with its problems reported at env.python, kept by to_lua.
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

// A Python env module in the experiment's directory and one in a directory of its own.
constexpr const char* kModule = R"(
import numpy as np

class Box:
    def __init__(self, n):
        self.shape, self.dtype = (n,), np.float32
        self.low, self.high = np.zeros(n, np.float32), np.ones(n, np.float32)

class Discrete:
    def __init__(self, n):
        self.n = n

class Line:
    action_space = Discrete(2)
    def __init__(self, size):
        self.observation_space = Box(int(size))
    def reset(self, seed=None, options=None):
        return np.full(self.observation_space.shape, 0.25, np.float32), {}
    def step(self, action):
        return np.zeros(self.observation_space.shape, np.float32), 0.0, True, False, {}

def make_env(size=3):
    return Line(size)

def broken():
    raise RuntimeError("the simulator licence expired")
)";

class EnvPython : public ::testing::Test {
 protected:
  void SetUp() override {
    ::setenv("MOONSEED_ACTOR_BINARY", MOONSEED_ACTOR_BINARY, 1);
    ::setenv("MOONSEED_PYTHON", MOONSEED_PYTHON, 1);
    dir_.write("exp/lines.py", kModule);
    dir_.write("shared/envs/far_lines.py", kModule);
  }
  void TearDown() override {
    ::unsetenv("MOONSEED_ACTOR_BINARY");
    ::unsetenv("MOONSEED_PYTHON");
  }

  std::string script(const std::string& env_fields, const std::string& more = "") {
    return dir_.write("exp/run.lua", "return { env = { " + env_fields + " }, " + more + " }\n");
  }

  TempDir dir_;
};

void expect_contains(const std::string& text, const std::string& part) {
  EXPECT_NE(text.find(part), std::string::npos) << "\"" << part << "\" not in: " << text;
}

TEST_F(EnvPython, TheModuleIsFoundBesideTheScriptAndItsIdNeedNotBeBuiltIn) {
  const engine::ExperimentConfig config =
      load_experiment(script("id = \"Line-v0\", python = \"lines:make_env\", options = { size = 5 }"));
  EXPECT_EQ(config.env.python, "lines:make_env");
  EXPECT_EQ(config.env.python_path, dir_.path() + "/exp");
  // Written elsewhere (as a run directory keeps config.lua), it still finds the same module.
  const engine::ExperimentConfig again = load_experiment(dir_.write("b/config.lua", to_lua(config)));
  EXPECT_EQ(again.env.python, "lines:make_env");
  EXPECT_NE(again.env.python_path.find(dir_.path() + "/exp"), std::string::npos) << again.env.python_path;
}

TEST_F(EnvPython, PythonPathEntriesAreResolvedAgainstTheScriptAfterItsDirectory) {
  const engine::ExperimentConfig config = load_experiment(
      script("id = \"Line-v0\", python = \"far_lines:make_env\", python_path = \"../shared/envs:/opt/x\""));
  EXPECT_EQ(config.env.python_path, dir_.path() + "/exp:" + dir_.path() + "/shared/envs:/opt/x");
}

TEST_F(EnvPython, AFactoryThatIsNotModuleColonFunctionIsRefusedBeforeAnyPythonRuns) {
  for (const char* bad : {"lines", "lines:", ":make_env", "lines:make-env", "1lines:make_env", "a..b:f"}) {
    const std::vector<ConfigIssue> issues = issues_of(script("python = \"" + std::string(bad) + "\""));
    ASSERT_EQ(issues.size(), 1u) << bad;
    EXPECT_EQ(issues[0].field, "env.python") << bad;
    expect_contains(issues[0].message, "expected MODULE:FUNCTION with Python names");
  }
}

TEST_F(EnvPython, WhatPythonCannotDescribeIsAnIssueAtEnvPythonWithPythonsWords) {
  std::vector<ConfigIssue> issues = issues_of(script("id = \"Line-v0\", python = \"lines:broken\""));
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].field, "env.python");
  EXPECT_EQ(issues[0].message,
            "env.python = \"lines:broken\": moonseed actor: making env 0 failed: RuntimeError: the simulator licence "
            "expired");
  // Not on the path: the message lists where Python looked.
  issues = issues_of(script("id = \"Line-v0\", python = \"far_lines:make_env\""));
  ASSERT_EQ(issues.size(), 1u);
  expect_contains(issues[0].message, "cannot import far_lines: ModuleNotFoundError: No module named 'far_lines'");
  expect_contains(issues[0].message, dir_.path() + "/exp");
}

TEST_F(EnvPython, ItNamesTheEnvAloneAndItsPathNeedsIt) {
  std::vector<ConfigIssue> issues = issues_of(script("python = \"lines:make_env\", model = \"m.xml\""));
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].field, "env.python");
  expect_contains(issues[0].message, "env.model belongs to another kind of env");
  issues = issues_of(script("python_path = \"envs\""));
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].field, "env.python_path");
  EXPECT_EQ(issues[0].message, "env.python_path is where env.python's module is found, and env.python is not set");
}

TEST_F(EnvPython, TheRewardShapingTrialSeesThePythonEnvsFirstObservation) {
  const std::string shaping =
      "reward_shaping = function(n, reward, obs) if obs[2] ~= 0.25 then error('obs[2] is ' .. obs[2]) end end";
  EXPECT_TRUE(issues_of(script("id = \"Line-v0\", python = \"lines:make_env\"", shaping)).empty());
  const std::vector<ConfigIssue> issues =
      issues_of(script("id = \"Line-v0\", python = \"lines:make_env\", options = { size = 2 }", shaping));
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].field, "reward_shaping");
}

}  // namespace
}  // namespace moonseed::scripts
