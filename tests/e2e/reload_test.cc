// Hot reload end to end: a real `moonseed run` training CartPole while the
// test edits its script on disk, as a user would in an editor.
#include <signal.h>

#include <cstdio>
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

// A run of a copy of the example, watched; the test edits the copy.
class ReloadRun : public ::testing::Test {
 protected:
  void SetUp() override {
    original_ = read_file(kExample);
    save_like_an_editor(script_, original_);
  }
  void start(const std::vector<std::string>& extra = {}) {
    std::vector<std::string> argv = {kBinary, "run", script_, "runs_dir=" + dir_ + "/runs",
                                     "log.interval_s=0.25", "stop.return_mean=0", "stop.seconds=0",
                                     kUntilStopped};
    argv.insert(argv.end(), extra.begin(), extra.end());
    learner_.emplace(argv, log_);
    ASSERT_TRUE(eventually(60, [&] { return trained_steps() > 0; })) << log();
  }
  std::string run_dir() const {
    auto dirs = list_dirs(dir_ + "/runs");
    return dirs.size() == 1 ? dirs[0] : std::string();
  }
  // Tick rows only (reload events are rows too).
  std::vector<MetricsRow> ticks() const {
    std::vector<MetricsRow> out;
    for (MetricsRow& r : read_metrics(run_dir() + "/metrics.jsonl")) {
      if (r.count("frames")) out.push_back(std::move(r));
    }
    return out;
  }
  double latest(const std::string& key) const {
    auto rows = ticks();
    return rows.empty() || !rows.back().count(key) ? -1 : rows.back().at(key);
  }
  double trained_steps() const { return run_dir().empty() ? 0 : latest("optimizer_steps"); }
  std::string log() const { return read_file(log_); }
  std::string metrics_text() const { return read_file(run_dir() + "/metrics.jsonl"); }
  bool logged(const std::string& text) const { return log().find(text) != std::string::npos; }
  void stop_cleanly() {
    learner_->signal(SIGINT);
    EXPECT_EQ(learner_->wait(60), std::optional<int>(0)) << log();
  }
  // Training goes on: more optimizer steps than now, later.
  void expect_training_goes_on() {
    const double now = trained_steps();
    EXPECT_TRUE(eventually(30, [&] { return trained_steps() > now; })) << log();
  }

  std::string dir_ = make_temp_dir("moonseed-reload");
  std::string script_ = dir_ + "/exp.lua";
  std::string log_ = dir_ + "/learner.log";
  std::string original_;
  std::optional<ChildProcess> learner_;
};

TEST_F(ReloadRun, AHotFieldIsAppliedAtATrainingStepAndRecorded) {
  start();
  save_like_an_editor(script_, replaced(replaced(original_, "lr = 1e-3", "lr = 2.5e-4"), "entropy_cost = 0.01",
                         "entropy_cost = 0.02"));
  ASSERT_TRUE(eventually(30, [&] { return latest("config_version") == 1; })) << log();
  EXPECT_TRUE(eventually(10, [&] { return latest("learning_rate") == 2.5e-4; })) << log();
  EXPECT_EQ(latest("entropy_cost"), 0.02);
  EXPECT_TRUE(logged("reload #1 applied: optimizer.lr 0.001 -> 0.00025, vtrace.entropy_cost 0.01 -> 0.02"))
      << log();
  const std::string metrics = metrics_text();
  EXPECT_NE(metrics.find("\"event\": \"reload\""), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("\"optimizer.lr\": {\"from\": 0.001, \"to\": 0.00025, \"reload\": \"hot\"}"),
            std::string::npos);
  // The run directory's config is what runs now, so a resume continues with it.
  EXPECT_NE(read_file(run_dir() + "/config.lua").find("lr = 0.00025"), std::string::npos);
  stop_cleanly();
}

TEST_F(ReloadRun, ARestartOnlyFieldIsRefusedNamingItAndNothingChanges) {
  start();
  save_like_an_editor(script_, replaced(replaced(original_, "hidden = { 64, 64 }", "hidden = { 32 }"), "lr = 1e-3",
                         "lr = 5e-4"));
  ASSERT_TRUE(eventually(30, [&] { return logged("reload refused"); })) << log();
  EXPECT_TRUE(logged("model.hidden ({64, 64} -> {32})")) << log();
  EXPECT_NE(metrics_text().find("\"event\": \"reload_refused\""), std::string::npos);
  expect_training_goes_on();
  // The hot half of the edit was not applied either.
  EXPECT_EQ(latest("config_version"), 0);
  EXPECT_EQ(latest("learning_rate"), 1e-3);
  EXPECT_NE(read_file(run_dir() + "/config.lua").find("hidden = {64, 64}"), std::string::npos);
  stop_cleanly();
}

TEST_F(ReloadRun, ABrokenScriptChangesNothingAndItsErrorIsShown) {
  start();
  save_like_an_editor(script_, replaced(original_, "lr = 1e-3", "lr = 5e-4,,"));
  ASSERT_TRUE(eventually(30, [&] { return logged("reload failed"); })) << log();
  EXPECT_TRUE(logged(script_ + ":12:")) << log();  // the optimizer line
  save_like_an_editor(script_, replaced(original_, "lr = 1e-3", "lr = \"fast\""));
  ASSERT_TRUE(eventually(30, [&] { return logged("optimizer.lr: expected a number"); })) << log();
  expect_training_goes_on();
  EXPECT_EQ(latest("config_version"), 0);
  EXPECT_EQ(latest("learning_rate"), 1e-3);
  // Fixed again: the next save applies.
  save_like_an_editor(script_, replaced(original_, "lr = 1e-3", "lr = 7e-4"));
  EXPECT_TRUE(eventually(30, [&] { return latest("learning_rate") == 7e-4; })) << log();
  stop_cleanly();
}

TEST_F(ReloadRun, TheOtherAlgorithmsTableIsRefusedNamingTheFieldAndTheRunsAlgo) {
  start();
  // R2D2's section on a V-trace run, saved with a hot change beside it.
  save_like_an_editor(script_, replaced(replaced(original_, "lr = 1e-3", "lr = 5e-4"), "  topology =",
                                        "  r2d2 = { batch = 32 },\n  topology ="));
  ASSERT_TRUE(eventually(30, [&] { return logged("reload refused"); })) << log();
  EXPECT_TRUE(logged("reload refused, nothing changed: r2d2.batch is a field of algo \"r2d2\", and this run's "
                     "algo is \"vtrace\", which does not use it"))
      << log();
  EXPECT_NE(metrics_text().find("\"event\": \"reload_refused\""), std::string::npos);
  expect_training_goes_on();
  // The run keeps its config: the hot half of the edit was not applied either.
  EXPECT_EQ(latest("config_version"), 0);
  EXPECT_EQ(latest("learning_rate"), 1e-3);
  EXPECT_EQ(read_file(run_dir() + "/config.lua").find("batch = 32"), std::string::npos);
  stop_cleanly();
}

TEST_F(ReloadRun, NoWatchLeavesTheRunAsItStarted) {
  start({"--no-watch"});
  save_like_an_editor(script_, replaced(original_, "lr = 1e-3", "lr = 2.5e-4"));
  const double steps = trained_steps();
  // Long enough for several watch periods and training steps.
  ASSERT_TRUE(eventually(30, [&] { return trained_steps() > steps + 20; })) << log();
  EXPECT_EQ(latest("learning_rate"), 1e-3);
  EXPECT_FALSE(logged("reload #") || logged("reload failed") || logged("reload refused"));
  stop_cleanly();
}

}  // namespace
}  // namespace moonseed::testing

namespace moonseed::testing {
namespace {

// A recipe-based script with a learning-rate schedule: the learner follows it
// step by step, as metrics.jsonl shows.
TEST(ScheduledRun, TheLearningRateFollowsItsScheduleDuringARealRun) {
  const std::string dir = make_temp_dir("moonseed-schedule");
  save_like_an_editor(dir + "/base.lua", read_file(kExample));
  save_like_an_editor(dir + "/exp.lua",
       "local ms = require 'moonseed'\n"
       "return ms.experiment {\n"
       "  extends = 'base',\n"
       "  optimizer = { lr = ms.linear { from = 1e-3, to = 1e-4, frames = 150000 } },\n"
       "}\n");
  ChildProcess learner({kBinary, "run", dir + "/exp.lua", "runs_dir=" + dir + "/runs", "log.interval_s=0.25",
                        "stop.return_mean=0", "stop.seconds=0", "stop.frames=300000", "--no-watch"},
                       dir + "/learner.log");
  ASSERT_EQ(learner.wait(240), std::optional<int>(0)) << read_file(dir + "/learner.log");
  auto dirs = list_dirs(dir + "/runs");
  ASSERT_EQ(dirs.size(), 1u);
  std::vector<MetricsRow> rows = read_metrics(dirs[0] + "/metrics.jsonl");
  ASSERT_GE(rows.size(), 3u);
  double previous = 1.0;
  int seen_between = 0;
  for (const MetricsRow& r : rows) {
    if (!r.count("learning_rate") || r.at("optimizer_steps") == 0) continue;
    const double lr = r.at("learning_rate");
    EXPECT_LE(lr, previous + 1e-12) << "the rate only goes down";
    EXPECT_GE(lr, 1e-4 - 1e-12);
    EXPECT_LE(lr, 1e-3 + 1e-12);
    if (lr < 9.9e-4 && lr > 1.01e-4) ++seen_between;
    previous = lr;
  }
  EXPECT_DOUBLE_EQ(previous, 1e-4);  // held after 150000 frames
  EXPECT_GE(seen_between, 1) << "a value strictly inside the ramp was logged";
  // The resolved config keeps the schedule, not just its value at 0.
  EXPECT_NE(read_file(dirs[0] + "/config.lua").find("schedule = \"linear\""), std::string::npos)
      << read_file(dirs[0] + "/config.lua");
  // And so do the sources: both files, with their digests.
  EXPECT_NE(read_file(dirs[0] + "/sources/ORIGINS").find("base.lua"), std::string::npos);
}

}  // namespace
}  // namespace moonseed::testing
