// End-to-end R2D2 (algo = "r2d2"): the real `moonseed` binary with
// examples/cartpole_r2d2.lua, real actor processes over Unix sockets, the
// prioritized replay on the learner, checkpoints with the replay beside them.
#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/e2e/process.h"

namespace moonseed::testing {
namespace {

const std::string kBinary = MOONSEED_BINARY;
const std::string kExample = std::string(MOONSEED_SOURCE_DIR) + "/examples/cartpole_r2d2.lua";

// The example with a fast log, no early stop, and a small replay that fills
// in a second, so training starts at once.
struct R2d2Run : TrainingRun {
  R2d2Run()
      : TrainingRun(kExample, {"log.interval_s=0.25", "stop.eval_return_mean=0", "r2d2.min_fill=64",
                               "r2d2.capacity=1000"}, "moonseed-r2d2") {}
};

// A short run that trains: with r2d2.samples_per_insert = 1 acting waits for
// learning, so 10000 frames (about 300 steps of each of 32 envs, hundreds of
// sequences) are optimizer steps too, however the machine is loaded.
const std::string kShortRun = "stop.frames=10000";

std::vector<std::string> files_in(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) out.push_back(e.path().filename().string());
  return out;
}

TEST(R2d2EndToEnd, TrainsThroughActorProcessesAndCheckpointsItsReplay) {
  R2d2Run run;
  ChildProcess learner(run.args({kShortRun}), run.log);
  ASSERT_EQ(learner.wait(120), std::optional<int>(0)) << read_file(run.log);
  const auto rows = run.metrics();
  ASSERT_GE(rows.size(), 3u) << read_file(run.log);
  EXPECT_GT(last(rows, "frames"), 1000);
  EXPECT_GT(last(rows, "optimizer_steps"), 0) << read_file(run.log);
  EXPECT_GT(last(rows, "episodes"), 0);
  EXPECT_GE(last(rows, "replay_size"), 64);
  EXPECT_LE(last(rows, "replay_size"), 1000);
  EXPECT_GT(last(rows, "explored_actions"), 0);  // Ape-X epsilons: some actions are random
  for (const char* key : {"loss_total", "mean_q", "mean_priority", "grad_norm"}) {
    EXPECT_TRUE(rows.back().count(key)) << key;
  }
  EXPECT_GT(last(rows, "replay_time_share"), 0);
  EXPECT_LT(last(rows, "replay_time_share"), 1);
  // The final checkpoint with its replay beside it, and its manifest.
  std::vector<std::string> ckpts = files_in(run.run_dir() + "/checkpoints");
  ASSERT_EQ(ckpts.size(), 3u) << ::testing::PrintToString(ckpts);
  std::sort(ckpts.begin(), ckpts.end());
  EXPECT_EQ(ckpts[1], ckpts[0] + ".replay") << ::testing::PrintToString(ckpts);
  EXPECT_EQ(ckpts[2], ckpts[0] + ".sum") << ::testing::PrintToString(ckpts);
  EXPECT_NE(read_file(run.run_dir() + "/actors/actor-0.log").find("bye"), std::string::npos);
}

TEST(R2d2EndToEnd, ResumeRestoresTheReplayAndTheCounters) {
  R2d2Run run;
  ChildProcess first(run.args({kShortRun}), run.log);
  ASSERT_EQ(first.wait(120), std::optional<int>(0)) << read_file(run.log);
  const double steps_before = last(run.metrics(), "optimizer_steps");
  const double replay_before = last(run.metrics(), "replay_size");
  const size_t rows_before = run.metrics().size();
  ASSERT_GT(steps_before, 0) << read_file(run.log);
  ASSERT_GE(replay_before, 64);

  // A resumed run's frames go on from the checkpoint's: 10000 more.
  ChildProcess second({kBinary, "run", "--resume", run.run_dir(), frames_past_last_row(run, 10000),
                       "log.interval_s=0.25"},
                      run.log);
  ASSERT_EQ(second.wait(120), std::optional<int>(0)) << read_file(run.log);
  const std::string out = read_file(run.log);
  EXPECT_NE(out.find("resumed"), std::string::npos) << out;
  EXPECT_EQ(out.find("empty replay"), std::string::npos) << out;
  // The first row of the resumed run already holds the restored replay
  // (sampling after a resume needs no refill).
  const auto rows = run.metrics();
  size_t resumed_row = rows_before;
  while (resumed_row < rows.size() && !rows[resumed_row].count("replay_size")) ++resumed_row;
  ASSERT_LT(resumed_row, rows.size()) << "no row of the resumed run in metrics.jsonl";
  EXPECT_GE(rows[resumed_row].at("replay_size"), replay_before);
  EXPECT_GT(last(rows, "optimizer_steps"), steps_before);
}

TEST(R2d2EndToEnd, AContinuousActionEnvIsRefusedBeforeAnythingStarts) {
  R2d2Run run;
  ChildProcess learner(run.args({"env.id=\"Pendulum-v1\""}), run.log);
  std::optional<int> code = learner.wait(30);
  ASSERT_TRUE(code.has_value());
  EXPECT_NE(*code, 0);
  const std::string out = read_file(run.log);
  EXPECT_NE(out.find("Discrete"), std::string::npos) << out;
  EXPECT_NE(out.find("Pendulum-v1"), std::string::npos) << out;
  EXPECT_TRUE(run.run_dir().empty());
}

}  // namespace
}  // namespace moonseed::testing
