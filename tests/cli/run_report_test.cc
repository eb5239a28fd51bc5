// cli/engine/run_report.h: the stop rules, the counters as JSON and checkpoint
// pruning of `moonseed run`, on plain values (no learner, no LibTorch).
#include "cli/engine/run_report.h"

#include <cstdlib>

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "cli/engine/progress.h"

namespace moonseed::cli {
namespace {

engine::LearnerStats stats(int64_t frames, int64_t episodes, double return_mean, double train_s = 0) {
  engine::LearnerStats s;
  s.frames = frames;
  s.train_s = train_s;
  s.episodes = episodes;
  s.return_mean = return_mean;
  return s;
}

TEST(StopReason, NoRuleNoStop) {
  EXPECT_EQ(stop_reason(engine::StopConfig{}, stats(1000000, 5000, 500)), "");
}

TEST(StopReason, FramesStopAtTheLimit) {
  engine::StopConfig stop;
  stop.frames = 1000;
  EXPECT_EQ(stop_reason(stop, stats(999, 0, 0)), "");
  EXPECT_EQ(stop_reason(stop, stats(1000, 0, 0)), "reached stop.frames = 1000");
}

// stop.seconds counts seconds of training (LearnerStats::train_s), not the
// run's wall time, which includes the actors' start-up.
TEST(StopReason, SecondsCountTrainingTime) {
  engine::StopConfig stop;
  stop.seconds = 2.5;
  EXPECT_EQ(stop_reason(stop, stats(0, 0, 0, 2.49)), "");
  EXPECT_EQ(stop_reason(stop, stats(0, 0, 0, 2.5)), "reached stop.seconds = 2.5");
}

// stop.wall_seconds counts the run's wall time, whether training ran in it or
// not (actors that hang before a first training batch: train_s never starts).
TEST(StopReason, WallSecondsCountTheClockEvenWithoutTraining) {
  engine::StopConfig stop;
  stop.wall_seconds = 10;
  EXPECT_EQ(stop_reason(stop, stats(0, 0, 0, 0), 9.99), "");
  EXPECT_EQ(stop_reason(stop, stats(0, 0, 0, 0), 10), "reached stop.wall_seconds = 10 (0 s of it training)");
  stop.seconds = 5;
  EXPECT_EQ(stop_reason(stop, stats(0, 0, 0, 1.5), 12), "reached stop.wall_seconds = 10 (1.5 s of it training)")
      << "stop.seconds is far from reached: training stood still";
}

TEST(StopReason, ReturnMeanNeedsAHundredEpisodes) {
  engine::StopConfig stop;
  stop.return_mean = 475;
  EXPECT_EQ(stop_reason(stop, stats(0, 99, 500)), "");
  EXPECT_EQ(stop_reason(stop, stats(0, 100, 474.9)), "");
  EXPECT_EQ(stop_reason(stop, stats(0, 100, 481.25)), "return_mean 481.2 >= stop.return_mean = 475 (the last 100 episodes, at frame 0)");
  // Before the first episode the mean is NaN: never reached.
  EXPECT_EQ(stop_reason(stop, stats(0, 100, std::nan(""))), "");
}

TEST(StopReason, EvalReturnMeanNeedsAHundredEvalEpisodes) {
  engine::StopConfig stop;
  stop.eval_return_mean = 200;
  engine::LearnerStats s = stats(0, 1000, 500);
  s.eval_episodes = 99;
  s.eval_return_mean = 300;
  EXPECT_EQ(stop_reason(stop, s), "");
  s.eval_episodes = 100;
  EXPECT_EQ(stop_reason(stop, s), "eval_return_mean 300 >= stop.eval_return_mean = 200 (the last 100 evaluation episodes, at frame 0)");
}

TEST(StopReason, FirstRuleInOrderWins) {
  engine::StopConfig stop;
  stop.frames = 10;
  stop.seconds = 1;
  stop.return_mean = 1;
  EXPECT_EQ(stop_reason(stop, stats(10, 100, 5, 5)), "reached stop.frames = 10");
  EXPECT_EQ(stop_reason(stop, stats(9, 100, 5, 5)), "reached stop.seconds = 1");
  EXPECT_EQ(stop_reason(stop, stats(9, 100, 5, 0.5)), "return_mean 5 >= stop.return_mean = 1 (the last 100 episodes, at frame 9)");
}

TEST(StopReason, ReturnRulesCompareTheEnvsOwnReturnUnlessToldToUseTheShapedOne) {
  engine::StopConfig stop;
  stop.return_mean = 100;
  stop.eval_return_mean = 100;
  // Shaping pays far more than the env: the shaped means pass, the env's do not.
  engine::LearnerStats s = stats(0, 100, 20);
  s.shaped_return_mean = 2020;
  s.eval_episodes = 100;
  s.eval_return_mean = 30;
  s.eval_shaped_return_mean = 3030;
  EXPECT_EQ(stop_reason(stop, s), "");
  stop.on_shaped_return = true;
  EXPECT_EQ(stop_reason(stop, s), "shaped_return_mean 2020 >= stop.return_mean = 100 (the last 100 episodes, at frame 0)");
  stop.return_mean = 0;
  EXPECT_EQ(stop_reason(stop, s), "eval_shaped_return_mean 3030 >= stop.eval_return_mean = 100 (the last 100 evaluation episodes, at frame 0)");
  stop.on_shaped_return = false;
  s.eval_return_mean = 150;
  EXPECT_EQ(stop_reason(stop, s), "eval_return_mean 150 >= stop.eval_return_mean = 100 (the last 100 evaluation episodes, at frame 0)");
}

bool has_key(const std::string& json, const std::string& key) {
  return json.find("\"" + key + "\": ") != std::string::npos;
}

TEST(AddCounters, WritesEveryCounterAndTheAlgorithmsMetrics) {
  engine::LearnerStats s = stats(12345, 67, 21.5);
  s.optimizer_steps = 89;
  s.actors_connected = 2;
  s.auth_failures = 7;
  s.learning_rate = 2.5e-4;
  s.agent_metrics = {{"loss_policy", 0.5}, {"mean_q", 1.25}};
  engine::MetricsRow row;
  add_counters(row, s, false);
  const std::string json = row.to_json();
  for (const char* key : {"frames", "episodes", "return_mean", "length_mean", "optimizer_steps", "trained_frames",
                          "train_time_s", "loss_total", "grad_norm", "learning_rate", "actors", "auth_failures", "queue",
                          "inference_batch_envs", "nonfinite_replaced"}) {
    EXPECT_TRUE(has_key(json, key)) << key << " in " << json;
  }
  EXPECT_NE(json.find("\"frames\": 12345"), std::string::npos) << json;
  EXPECT_NE(json.find("\"learning_rate\": 0.00025"), std::string::npos) << json;
  EXPECT_NE(json.find("\"auth_failures\": 7"), std::string::npos) << json;
  EXPECT_NE(json.find("\"loss_policy\": 0.5"), std::string::npos) << json;
  EXPECT_NE(json.find("\"mean_q\": 1.25"), std::string::npos) << json;
  // Without evaluation envs, recording or reward shaping, their keys are absent.
  EXPECT_FALSE(has_key(json, "eval_episodes")) << json;
  EXPECT_FALSE(has_key(json, "shaped_return_mean")) << json;
  EXPECT_FALSE(has_key(json, "record_steps")) << json;
}

TEST(FinalEval, TheLineSaysTheMeanHowManyEpisodesHowTheyWerePlayedAndTheirRange) {
  engine::Evaluation e;
  e.returns = {500, 488, 500, 497.5};
  e.lengths = {500, 488, 500, 497};
  e.truncated = {true, false, true, false};
  EXPECT_EQ(final_eval_text(e, "sampled"),
            "final policy: return_mean 496.4 over 4 evaluation episodes (sampled; min 488, max 500)");
  e.returns = {-150.25};
  EXPECT_EQ(final_eval_text(e, "epsilon 0.001"),
            "final policy: return_mean -150.2 over 1 evaluation episode (epsilon 0.001; min -150.2, max -150.2)");
  EXPECT_EQ(final_eval_text(engine::Evaluation{}, "greedy"), "final policy: no evaluation episode");
  engine::MetricsRow row;
  e.returns = {1, 2};
  add_final_eval(row, e);
  EXPECT_EQ(row.to_json(), "{\"final_eval_return_mean\": 1.5, \"final_eval_episodes\": 2}");
}

TEST(AddCounters, NumbersReadBackExactlyAndCountersStayWhole) {
  // Was %.10g: 1.2345678901e+10 frames and a third cut to 10 digits.
  engine::LearnerStats s = stats(12345678901, 3, 1.0 / 3.0);
  engine::MetricsRow row;
  add_counters(row, s, false);
  const std::string json = row.to_json();
  EXPECT_NE(json.find("\"frames\": 12345678901,"), std::string::npos) << json;
  const size_t at = json.find("\"return_mean\": ");
  ASSERT_NE(at, std::string::npos) << json;
  EXPECT_EQ(std::strtod(json.c_str() + at + 15, nullptr), 1.0 / 3.0) << json;
}

TEST(ProgressNumbers, FourSignificantDigitsWithoutScientificNotationInTheUsualRange) {
  EXPECT_EQ(format_number(-500), "-500");
  EXPECT_EQ(format_number(21.533333), "21.53");
  EXPECT_EQ(format_number(12345.6), "12346");  // was 1.235e+04
  EXPECT_EQ(format_number(0.000123456), "0.0001235");
  EXPECT_EQ(format_number(std::nan("")), "-");
}

TEST(AddCounters, EvaluationEnvsAndNaN) {
  engine::LearnerStats s = stats(0, 0, std::nan(""));
  s.eval_episodes = 3;
  s.eval_return_mean = 7;
  engine::MetricsRow row;
  add_counters(row, s, true);
  const std::string json = row.to_json();
  EXPECT_NE(json.find("\"eval_episodes\": 3"), std::string::npos) << json;
  EXPECT_NE(json.find("\"eval_return_mean\": 7"), std::string::npos) << json;
  // JSON has no NaN.
  EXPECT_NE(json.find("\"return_mean\": null"), std::string::npos) << json;
}

TEST(AddCounters, WithRewardShapingTheShapedReturnsGoBesideTheEnvsOwn) {
  engine::LearnerStats s = stats(100, 10, 21.5);
  s.reward_shaping = true;
  s.shaped_return_mean = 2171.5;
  s.eval_episodes = 4;
  s.eval_return_mean = 30;
  s.eval_shaped_return_mean = 3030;
  engine::MetricsRow row;
  add_counters(row, s, true);
  const std::string json = row.to_json();
  EXPECT_NE(json.find("\"return_mean\": 21.5"), std::string::npos) << json;
  EXPECT_NE(json.find("\"shaped_return_mean\": 2171.5"), std::string::npos) << json;
  EXPECT_NE(json.find("\"eval_return_mean\": 30"), std::string::npos) << json;
  EXPECT_NE(json.find("\"eval_shaped_return_mean\": 3030"), std::string::npos) << json;
}

TEST(AddCounters, RecorderStats) {
  engine::LearnerStats s;
  engine::RecorderStats r;
  r.recorded_steps = 1000;
  r.dropped_steps = 4;
  r.unrecorded_steps = 7;
  r.writer.durable_records = 10;
  r.writer.bytes_disk = 1 << 20;
  r.writer.bytes_raw = 3 << 20;
  r.cpu_seconds = 0.5;
  s.record = r;
  engine::MetricsRow row;
  add_counters(row, s, false);
  const std::string json = row.to_json();
  EXPECT_NE(json.find("\"record_steps\": 1000"), std::string::npos) << json;
  EXPECT_NE(json.find("\"record_dropped_steps\": 4"), std::string::npos) << json;
  // Steps recording off never wrote have their own column: "dropped" is a full queue's.
  EXPECT_NE(json.find("\"record_unrecorded_steps\": 7"), std::string::npos) << json;
  EXPECT_NE(json.find("\"record_durable_records\": 10"), std::string::npos) << json;
  EXPECT_NE(json.find("\"record_disk_mb\": 1"), std::string::npos) << json;
  EXPECT_NE(json.find("\"record_cpu_s\": 0.5"), std::string::npos) << json;
  EXPECT_NE(json.find("\"record_ratio\": 3"), std::string::npos) << json;
}

class CheckpointAndPrune : public ::testing::Test {
 protected:
  void TearDown() override { std::filesystem::remove_all(runs_); }
  // A stand-in for Learner::save_checkpoint.
  static void write(const std::string& path) { std::ofstream(path) << "weights"; }
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const std::string& p : dir_.checkpoints()) out.push_back(std::filesystem::path(p).filename().string());
    return out;
  }

  std::string runs_ = std::filesystem::temp_directory_path().string() + "/moonseed-run-report-" +
                      std::to_string(::getpid());
  engine::RunDirectory dir_ = engine::RunDirectory::create(runs_, "test");
};

TEST_F(CheckpointAndPrune, SavesIntoTheRunDirectoryAndKeepsTheNewest) {
  EXPECT_EQ(checkpoint_and_prune(dir_, 10, 2, write), dir_.checkpoint_path(10));
  EXPECT_TRUE(std::filesystem::exists(dir_.checkpoint_path(10)));
  checkpoint_and_prune(dir_, 20, 2, write);
  checkpoint_and_prune(dir_, 30, 2, write);
  EXPECT_EQ(names(), (std::vector<std::string>{"ckpt-20.pt", "ckpt-30.pt"}));
}

TEST_F(CheckpointAndPrune, AFailedSaveThrowsAndPrunesNothing) {
  checkpoint_and_prune(dir_, 10, 1, write);
  EXPECT_THROW(checkpoint_and_prune(dir_, 20, 1, [](const std::string&) { throw std::runtime_error("disk full"); }),
               std::runtime_error);
  EXPECT_EQ(names(), (std::vector<std::string>{"ckpt-10.pt"}));
}

// The saver reads the step itself (with training held), so the name follows it.
TEST_F(CheckpointAndPrune, ASaverThatReadsTheStepNamesTheCheckpointAfterIt) {
  const auto save_at = [](int64_t step) {
    return [step](const std::function<std::string(int64_t)>& path_of_step) {
      const std::string path = path_of_step(step);
      write(path);
      return path;
    };
  };
  EXPECT_EQ(checkpoint_and_prune(dir_, 2, save_at(17)), dir_.checkpoint_path(17));
  checkpoint_and_prune(dir_, 2, save_at(18));
  checkpoint_and_prune(dir_, 2, save_at(25));
  EXPECT_EQ(names(), (std::vector<std::string>{"ckpt-18.pt", "ckpt-25.pt"}));
}

TEST_F(CheckpointAndPrune, PruningRemovesWhatInterruptedSavesLeft) {
  write(dir_.checkpoints_dir() + "/ckpt-5.pt.partial");
  write(dir_.checkpoints_dir() + "/ckpt-6.pt.replay.partial");
  write(dir_.checkpoints_dir() + "/ckpt-7.pt.replay");  // its model file never came
  checkpoint_and_prune(dir_, 10, 2, write);
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(dir_.checkpoints_dir())) {
    files.push_back(e.path().filename().string());
  }
  EXPECT_EQ(files, (std::vector<std::string>{"ckpt-10.pt"}));
}

}  // namespace
}  // namespace moonseed::cli
