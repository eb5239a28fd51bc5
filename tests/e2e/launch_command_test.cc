// `moonseed launch` as a user runs it: the real binary loads the shipped example, writes the
// batch script (bash -n) or the manifests (tests/cli/k8s_manifest_check.py), and refuses bad
// input with a message, writing nothing.
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/e2e/process.h"

namespace moonseed::testing {
namespace {

namespace fs = std::filesystem;

const std::string kExample = std::string(MOONSEED_SOURCE_DIR) + "/examples/cartpole_vtrace.lua";

struct Launch {
  std::string dir = make_temp_dir("moonseed-launch");
  std::string out = dir + "/jobs";

  Finished run(std::vector<std::string> args) const {
    args.insert(args.begin(), {MOONSEED_BINARY, "launch"});
    return run_to_end(args, dir + "/launch-" + std::to_string(++runs_) + ".log", 120);
  }
  bool wrote_nothing() const { return !fs::exists(out) || fs::is_empty(out); }
  mutable int runs_ = 0;
};

TEST(LaunchCommand, WritesABatchScriptThatBashAcceptsAndATokenOnlyItsOwnerReads) {
  Launch launch;
  const Finished f = launch.run({"slurm", kExample, "--learners", "2", "--nodes", "1", "--out", launch.out,
                                 "stop.frames=20000"});
  ASSERT_EQ(f.exit_code, 0) << f.output;
  const std::string script = launch.out + "/cartpole-vtrace.sbatch";
  const std::string text = read_file(script);
  EXPECT_NE(text.find("#SBATCH --job-name=cartpole-vtrace\n"), std::string::npos) << text;
  EXPECT_NE(text.find("--world-size 2"), std::string::npos) << text;
  EXPECT_NE(text.find("overrides=(stop.frames=20000 topology.learners=2)"), std::string::npos) << text;
  EXPECT_EQ(run_to_end({"/bin/bash", "-n", script}, launch.dir + "/bash.log", 30).exit_code, 0);
  struct stat st {};
  ASSERT_EQ(::stat((launch.out + "/cartpole-vtrace.token").c_str(), &st), 0) << f.output;
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST(LaunchCommand, WritesManifestsTheCheckerAccepts) {
  Launch launch;
  const std::string token = launch.dir + "/token";
  std::ofstream(token) << "k8s-token\n";
  ::chmod(token.c_str(), 0600);
  const Finished f = launch.run({"k8s", kExample, "--learners", "2", "--auth-token-file", token, "--out", launch.out});
  ASSERT_EQ(f.exit_code, 0) << f.output;
  const std::string yaml = launch.out + "/cartpole-vtrace.k8s.yaml";
  EXPECT_NE(read_file(yaml).find("token: \"k8s-token\""), std::string::npos);
  const Finished check = run_to_end({"/usr/bin/python3", MOONSEED_K8S_CHECKER, yaml}, launch.dir + "/check.log", 60);
  EXPECT_EQ(check.exit_code, 0) << check.output;
}

TEST(LaunchCommand, RefusesAnUnknownKindAndWritesNothing) {
  Launch launch;
  const Finished f = launch.run({"nomad", kExample, "--out", launch.out});
  EXPECT_EQ(f.exit_code, 1) << f.output;
  EXPECT_NE(f.output.find("unknown kind 'nomad'"), std::string::npos) << f.output;
  EXPECT_TRUE(launch.wrote_nothing());
}

TEST(LaunchCommand, RefusesZeroNodesAndWritesNothing) {
  Launch launch;
  const Finished f = launch.run({"slurm", kExample, "--nodes", "0", "--out", launch.out});
  EXPECT_EQ(f.exit_code, 1) << f.output;
  EXPECT_NE(f.output.find("--nodes 0"), std::string::npos) << f.output;
  EXPECT_TRUE(launch.wrote_nothing());
}

TEST(LaunchCommand, RefusesAScriptWithAnErrorAndWritesNothing) {
  Launch launch;
  const std::string script = launch.dir + "/broken.lua";
  std::ofstream(script) << "return { name = \"broken\", topology = { actorz = 2 } }\n";
  const Finished f = launch.run({"slurm", script, "--out", launch.out});
  EXPECT_EQ(f.exit_code, 1) << f.output;
  EXPECT_NE(f.output.find("actorz"), std::string::npos) << f.output;
  EXPECT_TRUE(launch.wrote_nothing());
}

}  // namespace
}  // namespace moonseed::testing
