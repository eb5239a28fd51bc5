// Stop rules of real `moonseed run` processes (docs/metrics.md "Stop rules"):
// looked at continuously rather than once per metrics row, stop.seconds
// counting seconds of training rather than the actors' start-up, and
// schedules that go on where they were across --resume.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/e2e/process.h"

namespace moonseed::testing {
namespace {

const std::string kBinary = MOONSEED_BINARY;
const std::string kVtrace = std::string(MOONSEED_SOURCE_DIR) + "/examples/cartpole_vtrace.lua";

// The run's last row: the "stop" row finish() writes.
MetricsRow stop_row(const TrainingRun& run) {
  const std::vector<MetricsRow> stops = read_events(run.run_dir() + "/metrics.jsonl", "stop");
  return stops.empty() ? MetricsRow{} : stops.back();
}

// With log.interval_s = 60 the rules used to be looked at only at the first
// row, 60 s in, by when the run had gone far past stop.frames. Now the run
// ends long before that row, and acting stops at the limit: the final count
// is at most one inference round of every env past it.
TEST(StopRules, FramesStopTheRunAtOnceWhateverTheLogInterval) {
  constexpr int kActors = 2, kEnvsPerActor = 32;
  constexpr int64_t kFrames = 3000;
  TrainingRun run(kVtrace,
                  {"log.interval_s=60", "log.progress=false", "stop.return_mean=0", "stop.seconds=0",
                   "stop.frames=" + std::to_string(kFrames), "topology.actors=" + std::to_string(kActors),
                   "topology.envs_per_actor=" + std::to_string(kEnvsPerActor)},
                  "moonseed-stop-frames");
  ChildProcess learner(run.args({}), run.log);
  // Generous for a loaded machine, and still well before the first row at 60 s.
  ASSERT_EQ(learner.wait(45), std::optional<int>(0)) << read_file(run.log);
  const MetricsRow stop = stop_row(run);
  ASSERT_TRUE(stop.count("frames")) << read_file(run.log);
  EXPECT_GE(stop.at("frames"), kFrames);
  // Each env has one step in flight: one batch past the limit is at most all of them.
  EXPECT_LE(stop.at("frames"), kFrames + kActors * kEnvsPerActor) << read_file(run.log);
  EXPECT_NE(read_file(run.log).find("moonseed: stopped: reached stop.frames = 3000"), std::string::npos)
      << read_file(run.log);
}

// An actor that joins long after the learner started (a slow machine, a
// remote actor started late): stop.seconds used to count from the start, so
// the run stopped before it trained at all. It counts seconds of training now.
TEST(StopRules, SecondsCountTrainingNotTheWaitForActors) {
  constexpr double kSeconds = 3;
  TrainingRun run(kVtrace,
                  {"log.interval_s=0.25", "log.progress=false", "stop.return_mean=0", "stop.seconds=3",
                   "topology.local_actors=0", "topology.actors=1"},
                  "moonseed-stop-seconds");
  ChildProcess learner(run.args({}), run.log);
  // No actor yet: wait until the run has been up longer than stop.seconds (by its own rows).
  ASSERT_TRUE(eventually(90, [&] {
    return !learner.running() || (!run.run_dir().empty() && last(run.metrics(), "time_s") > kSeconds + 1);
  })) << read_file(run.log);
  ASSERT_TRUE(learner.running()) << "stopped before any actor joined:\n" << read_file(run.log);
  const std::string address = read_file(run.run_dir() + "/learner.address");
  ASSERT_FALSE(address.empty());
  ChildProcess actor({kBinary, "actor", "--connect", address.substr(0, address.find('\n'))},
                     run.runs_dir + "/actor.log");
  ASSERT_EQ(learner.wait(120), std::optional<int>(0)) << read_file(run.log);
  const MetricsRow stop = stop_row(run);
  ASSERT_TRUE(stop.count("train_time_s")) << read_file(run.log);
  EXPECT_GT(stop.at("optimizer_steps"), 0) << read_file(run.log);
  EXPECT_GE(stop.at("train_time_s"), kSeconds);
  // Wall time counts the wait for the actor too.
  EXPECT_GT(stop.at("time_s"), stop.at("train_time_s") + 1);
  EXPECT_NE(read_file(run.log).find("moonseed: stopped: reached stop.seconds = 3"), std::string::npos)
      << read_file(run.log);
}

// A learning rate that follows a schedule over frames, resumed twice
// mid-schedule: after each resume it goes on from where it was (never back
// towards its start value), and so does the training time.
TEST(StopRules, ASchedulesValueGoesOnAcrossResumes) {
  const std::string dir = make_temp_dir("moonseed-stop-schedule");
  const std::string script = dir + "/scheduled.lua";
  constexpr double kFrom = 1e-3, kTo = 1e-4, kOver = 40000;
  save_like_an_editor(script, replaced(read_file(kVtrace), "lr = 1e-3,",
                                       "lr = ms.linear { from = 1e-3, to = 1e-4, frames = 40000 },"));
  TrainingRun run(script, {"log.interval_s=0.25", "log.progress=false", "stop.return_mean=0", "stop.seconds=0"},
                  "moonseed-stop-schedule");
  ChildProcess first(run.args({"stop.frames=8000"}), run.log);
  ASSERT_EQ(first.wait(120), std::optional<int>(0)) << read_file(run.log);
  for (const char* frames : {"stop.frames=16000", "stop.frames=24000"}) {
    ChildProcess next({kBinary, "run", "--resume", run.run_dir(), frames, "log.progress=false"}, run.log);
    ASSERT_EQ(next.wait(120), std::optional<int>(0)) << read_file(run.log);
  }
  const std::vector<MetricsRow> rows = run.metrics();
  int resumes = 0;
  double lr_before = kFrom, train_time_before = 0;
  int64_t steps_at_resume = 0;
  for (const MetricsRow& row : rows) {
    // The resume row: an event with the restored counters and no fps (the stop row has one).
    if (row.count("event") && row.count("optimizer_steps") && !row.count("fps")) {
      ++resumes;
      EXPECT_GE(row.at("train_time_s"), train_time_before) << "training time went back at a resume";
      train_time_before = row.at("train_time_s");
      steps_at_resume = static_cast<int64_t>(row.at("optimizer_steps"));
      continue;
    }
    // Rows before this process's first step show no step's rate yet.
    if (!row.count("learning_rate") || row.at("optimizer_steps") <= steps_at_resume) continue;
    const double lr = row.at("learning_rate");
    EXPECT_LE(lr, lr_before * (1 + 1e-9)) << "learning_rate went back up at frames " << row.at("frames");
    // The rate a step used at frames <= this row's: never below the schedule here.
    EXPECT_GE(lr, kFrom + (kTo - kFrom) * std::min(1.0, row.at("frames") / kOver) - 1e-12);
    EXPECT_GE(row.at("train_time_s"), train_time_before);
    lr_before = lr;
    train_time_before = row.at("train_time_s");
  }
  EXPECT_EQ(resumes, 2) << read_file(run.log);
  // Trained well into the schedule (60% of it), never back at its start value.
  EXPECT_LT(lr_before, kFrom - (kFrom - kTo) * 0.4) << read_file(run.log);
}

}  // namespace
}  // namespace moonseed::testing
