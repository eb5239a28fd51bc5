// `moonseed launch slurm` on a real one-node Slurm cluster the test starts
// (tests/e2e/slurm_cluster.h): the batch script it writes for examples/cartpole_vtrace.lua is
// submitted with sbatch, trains and ends by itself; a long one is scancelled and every rank
// saves its checkpoint and leaves no process behind. Skipped, saying why, without root or
// without slurm-wlm and munge.
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/e2e/process.h"
#include "tests/e2e/slurm_cluster.h"

namespace moonseed::testing {
namespace {

namespace fs = std::filesystem;

const std::string kExample = std::string(MOONSEED_SOURCE_DIR) + "/examples/cartpole_vtrace.lua";
// Learner ranks of the jobs: a group of two on one node, each rank with one local actor, so two
// cores cope.
constexpr int kLearners = 2;

// The cluster, a token and a job written by `moonseed launch slurm` for the example.
class SlurmLaunch : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const std::string why = SlurmCluster::unavailable(); !why.empty()) GTEST_SKIP() << why;
    cluster_ = std::make_unique<SlurmCluster>();
    token_ = cluster_->dir() + "/token";
    std::ofstream(token_) << "slurm-test-token\n";
    ::chmod(token_.c_str(), 0600);
    jobs_ = cluster_->dir() + "/jobs";
    runs_ = cluster_->dir() + "/runs";
    actor_port_ = free_port_run(kLearners);
  }

  // `moonseed launch slurm` for the example with these overrides; the batch script's path.
  std::string launch(const std::vector<std::string>& overrides) {
    std::vector<std::string> argv = {MOONSEED_BINARY, "launch", "slurm", kExample,
                                     "--learners", std::to_string(kLearners), "--nodes", "1",
                                     "--cpus-per-task", "1", "--out", jobs_, "--auth-token-file", token_,
                                     "--port", std::to_string(free_port()), "--actor-port",
                                     std::to_string(actor_port_), "runs_dir=" + runs_, "stop.seconds=0",
                                     "stop.return_mean=0", "log.progress=false",
                                     "topology.actors=" + std::to_string(kLearners)};
    argv.insert(argv.end(), overrides.begin(), overrides.end());
    const Finished f = run_to_end(argv, cluster_->dir() + "/launch.log", 120);
    EXPECT_EQ(f.exit_code, 0) << f.output;
    return jobs_ + "/cartpole-vtrace.sbatch";
  }

  std::string job_output(const std::string& job) const {
    return read_file(jobs_ + "/cartpole-vtrace-" + job + ".out");
  }

  // The processes of this test's runs: a learner (its command line names the runs dir) or an
  // actor (it connects to the test's actor port).
  std::vector<std::string> run_processes() const {
    std::vector<std::string> found;
    const std::string port = ":" + std::to_string(actor_port_);
    for (const auto& entry : fs::directory_iterator("/proc")) {
      const std::string pid = entry.path().filename().string();
      if (pid.find_first_not_of("0123456789") != std::string::npos || pid == std::to_string(::getpid())) continue;
      std::string cmdline = read_file(entry.path().string() + "/cmdline");
      for (char& c : cmdline) c = c == '\0' ? ' ' : c;
      const bool actor = cmdline.find("--connect") != std::string::npos && cmdline.find(port) != std::string::npos;
      if (cmdline.find(runs_) != std::string::npos || actor) found.push_back(pid + ": " + cmdline);
    }
    return found;
  }

  std::unique_ptr<SlurmCluster> cluster_;
  std::string token_, jobs_, runs_;
  int actor_port_ = 0;
};

std::string joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& line : lines) out += line + "\n";
  return out;
}

TEST_F(SlurmLaunch, ABatchScriptFromLaunchTrainsTheExampleAndEndsByItself) {
  const std::string job = cluster_->submit(launch({"stop.frames=20000"}));
  const std::optional<std::string> state = cluster_->wait_for_end(job, 400);
  ASSERT_TRUE(state.has_value()) << "the job did not end within 400 s\n" << job_output(job);
  EXPECT_EQ(*state, "COMPLETED") << job_output(job);
  EXPECT_NE(job_output(job).find("learner ranks ended with status 0"), std::string::npos) << job_output(job);

  // One run directory: rank 1 sees rank 0's (one node) and keeps its files in RUN_DIR/ranks/1.
  const std::vector<std::string> dirs = list_dirs(runs_);
  ASSERT_EQ(dirs.size(), 1u) << job_output(job);
  const std::vector<MetricsRow> rows = read_metrics(dirs[0] + "/metrics.jsonl");
  ASSERT_FALSE(rows.empty()) << job_output(job);
  EXPECT_GT(last(rows, "optimizer_steps"), 0) << job_output(job);
  EXPECT_GE(last(rows, "frames"), 20000) << job_output(job);
  EXPECT_EQ(last(rows, "learners"), kLearners) << job_output(job);
  EXPECT_GT(last(read_metrics(dirs[0] + "/ranks/1/metrics.jsonl"), "frames"), 0) << job_output(job);
  EXPECT_EQ(read_events(dirs[0] + "/metrics.jsonl", "stop").size(), 1u) << job_output(job);
  // Both ranks ended at the group's last step.
  EXPECT_EQ(read_events(dirs[0] + "/ranks/1/metrics.jsonl", "stop").size(), 1u) << job_output(job);
  EXPECT_EQ(last(read_metrics(dirs[0] + "/ranks/1/metrics.jsonl"), "optimizer_steps"), last(rows, "optimizer_steps"));
}

TEST_F(SlurmLaunch, ScancelMakesEveryRankSaveACheckpointAndLeavesNoProcess) {
  const std::string job = cluster_->submit(launch({kUntilStopped, "checkpoint.interval_s=0"}));
  // Training has begun once a metrics row counts an optimizer step.
  const bool trains = eventually(300, [&] {
    const std::vector<std::string> dirs = list_dirs(runs_);
    return dirs.size() == 1 && last(read_metrics(dirs[0] + "/metrics.jsonl"), "optimizer_steps") > 0;
  });
  ASSERT_TRUE(trains) << "no training within 300 s (" << cluster_->job_state(job) << ")\n" << job_output(job);

  ASSERT_TRUE(cluster_->cancel(job)) << read_file(cluster_->log());
  const std::optional<std::string> state = cluster_->wait_for_end(job, 120);
  ASSERT_TRUE(state.has_value()) << job_output(job);
  EXPECT_EQ(*state, "CANCELLED") << job_output(job);
  // The job's state changes at once; its processes end after their checkpoint.
  std::vector<std::string> left;
  EXPECT_TRUE(eventually(120, [&] {
    left = run_processes();
    return left.empty();
  })) << "still running after scancel:\n" << joined(left);

  const std::string dir = list_dirs(runs_).at(0);
  const std::vector<MetricsRow> stop = read_events(dir + "/metrics.jsonl", "stop");
  ASSERT_EQ(stop.size(), 1u) << job_output(job) << read_file(dir + "/metrics.jsonl");
  bool checkpoint = false;
  for (const auto& entry : fs::directory_iterator(dir + "/checkpoints")) {
    checkpoint = checkpoint || entry.path().filename().string().rfind("ckpt-", 0) == 0;
  }
  EXPECT_TRUE(checkpoint) << "no final checkpoint in " << dir << "/checkpoints\n" << job_output(job);
}

}  // namespace
}  // namespace moonseed::testing
