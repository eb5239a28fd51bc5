// Who can read a run and join it: file modes, auth tokens kept off the
// command line, a learner that refuses to listen beyond this host without a
// token (docs/security.md). Real runs of the `moonseed` binary.
#include <signal.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/e2e/process.h"

namespace moonseed::testing {
namespace {

const std::string kBinary = MOONSEED_BINARY;
const std::string kExample = std::string(MOONSEED_SOURCE_DIR) + "/examples/cartpole_vtrace.lua";

struct CartpoleRun : TrainingRun {
  CartpoleRun() : TrainingRun(kExample, {"log.interval_s=0.25", "stop.return_mean=0"}, "moonseed-secrets") {}
};

unsigned mode_of(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return 0;
  return st.st_mode & 0777;
}

// A token file of mode 0600.
std::string token_file(const std::string& dir, const std::string& name, const std::string& token) {
  const std::string path = dir + "/" + name;
  std::ofstream(path) << token << "\n";
  ::chmod(path.c_str(), 0600);
  return path;
}

// Every directory and file of a finished run has `dir_mode` / `file_mode`.
void expect_modes(const std::string& run_dir, unsigned dir_mode, unsigned file_mode) {
  EXPECT_EQ(mode_of(run_dir), dir_mode) << run_dir;
  size_t files = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(run_dir)) {
    const std::string path = e.path().string();
    if (e.is_directory()) {
      EXPECT_EQ(mode_of(path), dir_mode) << path;
    } else if (e.is_regular_file()) {
      EXPECT_EQ(mode_of(path), file_mode) << path;
      ++files;
    }
  }
  // config.lua, metrics.jsonl, the checkpoint, the actors' logs and pids, the sources...
  EXPECT_GE(files, 7u);
}

TEST(FilesAndSecrets, ARunsDirectoryAndFilesAreTheOwnersOnlyOrGroupReadableWhenAsked) {
  for (const bool group : {false, true}) {
    CartpoleRun run;
    ChildProcess learner(run.args({"stop.frames=5000", group ? "group_access=true" : "group_access=false"}), run.log);
    ASSERT_EQ(learner.wait(90), std::optional<int>(0)) << read_file(run.log);
    ASSERT_FALSE(run.run_dir().empty());
    SCOPED_TRACE(group ? "group_access=true" : "group_access=false");
    expect_modes(run.run_dir(), group ? 0750 : 0700, group ? 0640 : 0600);
  }
}

TEST(FilesAndSecrets, TokensComeFromAFileNeverFromTheCommandLine) {
  CartpoleRun run;
  const std::string secret = token_file(run.runs_dir, "token", "s3cret");
  // Listening on every interface is allowed with a token; the local actor gets it through the environment.
  ChildProcess learner(run.args({kUntilStopped, "topology.transport=\"tcp\"", "topology.local_actors=1",
                                 "topology.listen=\"tcp:0.0.0.0:0\"", "--auth-token-file", secret}),
                       run.log);
  const std::string address = run.address_once_connected(1, 60);
  ASSERT_FALSE(address.empty()) << read_file(run.log);

  ChildProcess on_command_line({kBinary, "actor", "--connect", address, "--auth-token", "s3cret"},
                               run.runs_dir + "/cmdline.log");
  EXPECT_EQ(on_command_line.wait(30), std::optional<int>(2));
  EXPECT_NE(read_file(run.runs_dir + "/cmdline.log").find("use --auth-token-file FILE"), std::string::npos)
      << read_file(run.runs_dir + "/cmdline.log");

  ChildProcess intruder(
      {kBinary, "actor", "--connect", address, "--auth-token-file", token_file(run.runs_dir, "guess", "guess")},
      run.runs_dir + "/intruder.log");
  EXPECT_EQ(intruder.wait(30), std::optional<int>(4)) << read_file(run.runs_dir + "/intruder.log");
  EXPECT_NE(read_file(run.runs_dir + "/intruder.log").find("wrong auth token"), std::string::npos);

  ChildProcess friend_actor({kBinary, "actor", "--connect", address, "--auth-token-file", secret},
                            run.runs_dir + "/friend.log");
  EXPECT_TRUE(eventually(60, [&] { return last(run.metrics(), "actors") == 2; }))
      << read_file(run.runs_dir + "/friend.log");
  learner.signal(SIGTERM);
  EXPECT_EQ(learner.wait(60), std::optional<int>(0)) << read_file(run.log);
  EXPECT_EQ(friend_actor.wait(30), std::optional<int>(0));
}

TEST(FilesAndSecrets, ALearnerReachableFromOtherHostsNeedsATokenOrInsecure) {
  CartpoleRun run;
  const std::vector<std::string> open = {"stop.frames=5000", "topology.transport=\"tcp\"",
                                         "topology.listen=\"tcp:0.0.0.0:0\""};
  ChildProcess refused(run.args(open), run.log);
  EXPECT_EQ(refused.wait(60), std::optional<int>(1)) << read_file(run.log);
  EXPECT_NE(read_file(run.log).find("can be reached from other hosts, and without an auth token"), std::string::npos)
      << read_file(run.log);
  EXPECT_TRUE(list_dirs(run.runs_dir).empty()) << "nothing was created";

  std::vector<std::string> insecure = open;
  insecure.push_back("--insecure");
  ChildProcess allowed(run.args(insecure), run.log);
  EXPECT_EQ(allowed.wait(90), std::optional<int>(0)) << read_file(run.log);
  EXPECT_NE(read_file(run.log).find("without an auth token (--insecure)"), std::string::npos) << read_file(run.log);
}

TEST(FilesAndSecrets, AReaderThatClosesThePipeDoesNotCostTheFinalCheckpoint) {
  CartpoleRun run;
  std::string command;
  for (const std::string& a : run.args({"stop.frames=5000", "log.progress=false"})) command += "'" + a + "' ";
  // head reads one line and exits; the run writes more lines to the closed pipe.
  ChildProcess shell({"/bin/sh", "-c", command + "2>&1 | head -n 1"}, run.log);
  EXPECT_EQ(shell.wait(90), std::optional<int>(0)) << read_file(run.log);
  ASSERT_FALSE(run.run_dir().empty());
  EXPECT_TRUE(eventually(30, [&] { return !std::filesystem::is_empty(run.run_dir() + "/checkpoints"); }))
      << "the run died of SIGPIPE before its final checkpoint";
  EXPECT_EQ(read_events(run.run_dir() + "/metrics.jsonl", "stop").size(), 1u);
}

}  // namespace
}  // namespace moonseed::testing
