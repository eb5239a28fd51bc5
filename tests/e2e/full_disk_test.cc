// A real `moonseed run` whose run directory, or experience log, is on a small
// tmpfs that fills up: checkpoints, metrics rows or recording fail, the run
// goes on, and what is on disk stays usable (docs/reliability.md "A full
// disk: checkpoints and metrics" and "A full disk: the experience log").
// Mounting needs root (CI runs as root); elsewhere the tests are skipped.
#include <signal.h>

#include <cctype>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "engine/run/checkpoint_manifest.h"
#include "tests/e2e/checkpoint_files.h"
#include "tests/e2e/process.h"
#include "tests/small_disk.h"

namespace moonseed::testing {
namespace {

namespace fs = std::filesystem;

const std::string kBinary = MOONSEED_BINARY;
const std::string kR2d2 = std::string(MOONSEED_SOURCE_DIR) + "/examples/cartpole_r2d2.lua";
const std::string kVtrace = std::string(MOONSEED_SOURCE_DIR) + "/examples/cartpole_vtrace.lua";

class FullDisk : public ::testing::Test {
 protected:
  void SetUp() override {
    work_ = make_temp_dir("moonseed-full-disk");
    disk_ = work_ + "/disk";
    // 4 MiB: one R2D2 checkpoint of this run (~2.2 MB) fits, a second beside it does not.
    if (!small_disk_.mount(disk_, "4m")) GTEST_SKIP() << small_disk_.mount_error();
  }

  void TearDown() override {
    learner_.reset();  // killed if still running, so nothing holds the mount
    small_disk_.unmount();
    std::error_code ec;
    fs::remove_all(work_, ec);
  }

  void fill() { small_disk_.fill(); }
  void remount(const std::string& size) { small_disk_.resize(size); }

  // Runs `moonseed ARGS` to its end with its output in WORK/NAME; returns the
  // output, after checking that it exited with 0.
  std::string run_to_exit(std::vector<std::string> args, const std::string& name) {
    const std::string log = work_ + "/" + name;
    args.insert(args.begin(), kBinary);
    learner_ = std::make_unique<ChildProcess>(args, log);
    const std::optional<int> code = learner_->wait(120);
    const std::string out = read_file(log);
    EXPECT_EQ(code, std::optional<int>(0)) << out;
    return out;
  }

  std::string work_, disk_;
  SmallDisk small_disk_;
  std::unique_ptr<ChildProcess> learner_;
};

// Every line of `path` as JSON, by Python's parser: "" when all parse, else what does not.
std::string lines_that_are_not_json(const std::string& path, const std::string& out) {
  ChildProcess python({"/usr/bin/python3", "-c",
                       "import json, sys\n"
                       "bad = 0\n"
                       "for n, line in enumerate(open(sys.argv[1], 'rb'), 1):\n"
                       "    try:\n"
                       "        json.loads(line)\n"
                       "    except ValueError as e:\n"
                       "        bad += 1; print('line %d: %s: %r' % (n, e, line[:200]))\n"
                       "sys.exit(1 if bad else 0)\n",
                       path},
                      out);
  const std::optional<int> code = python.wait(60);
  return code == std::optional<int>(0) ? "" : "python3 says:\n" + read_file(out);
}

// LibTorch's zip writer used to throw from its destructor on the first failed
// write: std::terminate, exit 134, and no final checkpoint. metrics.jsonl was
// cut mid-row at a 4096-byte buffer boundary.
TEST_F(FullDisk, CheckpointsAndMetricsRowsFailButTheRunGoesOnAndKeepsWhatItHas) {
  const std::string log = work_ + "/learner.log";
  learner_ = std::make_unique<ChildProcess>(
      std::vector<std::string>{kBinary, "run", kR2d2, "runs_dir=" + disk_, "log.interval_s=0.1",
                               "checkpoint.interval_s=1", "checkpoint.keep=2", "stop.eval_return_mean=0",
                               "r2d2.min_fill=64", "r2d2.capacity=1000", "stop.seconds=0", kUntilStopped,
                               "log.progress=false"},
      log);
  ASSERT_TRUE(eventually(60, [&] { return list_dirs(disk_).size() == 1; })) << read_file(log);
  const std::string dir = list_dirs(disk_)[0];
  const auto failures = [&] { return count(read_file(log), "checkpoint failed:"); };

  // The first checkpoint fits; the next ones do not fit beside it.
  ASSERT_TRUE(eventually(60, [&] { return !newest_complete_r2d2_checkpoint(dir).empty(); })) << read_file(log);
  ASSERT_TRUE(eventually(60, [&] { return failures() >= 2 || !learner_->running(); })) << read_file(log);
  ASSERT_TRUE(learner_->running()) << read_file(log);
  // Not a byte left: rows fail too.
  fill();
  ASSERT_TRUE(eventually(60, [&] { return count(read_file(log), "metrics.jsonl: No space left on device") == 1; }))
      << read_file(log);
  ASSERT_TRUE(learner_->running()) << read_file(log);

  // Room again: rows and checkpoints are written again, on their own.
  fs::remove(disk_ + "/filler");
  remount("32m");
  ASSERT_TRUE(eventually(60, [&] { return count(read_file(log), "failed attempt(s)") == 1; })) << read_file(log);
  ASSERT_TRUE(eventually(60, [&] { return count(read_file(log), "metrics.jsonl is written again") == 1; }))
      << read_file(log);

  // Full again, to the end: the final checkpoint fails as well.
  const size_t failed_before = failures();
  fill();
  ASSERT_TRUE(eventually(60, [&] { return failures() > failed_before; })) << read_file(log);
  ASSERT_TRUE(eventually(60, [&] { return count(read_file(log), "metrics.jsonl: No space left on device") >= 2; }))
      << read_file(log);
  learner_->signal(SIGINT);
  const std::optional<int> code = learner_->wait(60);
  const std::string out = read_file(log);
  ASSERT_EQ(code, std::optional<int>(0)) << out;
  EXPECT_NE(out.find("training goes on"), std::string::npos) << out;
  EXPECT_NE(out.find("final checkpoint failed"), std::string::npos) << out;
  EXPECT_NE(out.find("--resume continues from"), std::string::npos) << out;
  // Once per outage, not once per row: each report after the first follows a
  // "written again". (A failed checkpoint frees what its file had taken before
  // the disk filled, so a row may fit between two outages we did not cause.)
  std::vector<char> outages;
  for (size_t at = out.find("metrics.jsonl"); at != std::string::npos; at = out.find("metrics.jsonl", at + 1)) {
    if (out.compare(at, 40, "metrics.jsonl: No space left on device; ") == 0) outages.push_back('x');
    if (out.compare(at, 30, "metrics.jsonl is written again") == 0) outages.push_back('o');
  }
  ASSERT_GE(outages.size(), 3u) << out;
  for (size_t i = 0; i < outages.size(); ++i) EXPECT_EQ(outages[i], i % 2 == 0 ? 'x' : 'o') << "report " << i << "\n" << out;

  EXPECT_EQ(lines_that_are_not_json(dir + "/metrics.jsonl", work_ + "/python.log"), "");
  // Every checkpoint file there is whole, sealed and loads, with its replay; no half-written one is left.
  size_t loaded = 0;
  for (const std::string& name : file_names(dir + "/checkpoints")) {
    EXPECT_EQ(name.find(".partial"), std::string::npos) << name;
    if (checkpoint_step(name) < 0) continue;
    const std::string path = dir + "/checkpoints/" + name;
    EXPECT_TRUE(fs::exists(path + ".replay")) << name;
    EXPECT_NO_THROW(load_checkpoint(dir, path)) << name;
    // Sealed, and as written: a checkpoint whose manifest did not fit is not left behind.
    const engine::CheckpointCheck check = engine::verify_checkpoint(path);
    EXPECT_TRUE(check.sealed) << name;
    EXPECT_TRUE(check.good()) << check.damage;
    ++loaded;
  }
  EXPECT_GE(loaded, 1u);
}

// The lines of `text` holding `needle`.
std::vector<std::string> lines_with(const std::string& text, const std::string& needle) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(start, end - start);
    if (line.find(needle) != std::string::npos) out.push_back(line);
    start = end + 1;
  }
  return out;
}

const std::string kRecordingOff = "experience recording is off, training goes on without it";

// `out` says once that recording is off, on the line naming the log's file and the error.
void expect_recording_off_said_once(const std::string& out, const std::string& experience) {
  const std::vector<std::string> lines = lines_with(out, kRecordingOff);
  ASSERT_EQ(lines.size(), 1u) << out;
  EXPECT_NE(lines[0].find("cannot write " + experience + "/experience-"), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("No space left on device"), std::string::npos) << lines[0];
}

// `moonseed log verify` passes on the log, and no segment is left .partial.
void expect_log_verifies(const std::string& experience, const std::string& out) {
  ChildProcess verify({kBinary, "log", "verify", experience}, out);
  EXPECT_EQ(verify.wait(60), std::optional<int>(0)) << read_file(out);
  for (const std::string& file : file_names(experience)) EXPECT_EQ(file.find(".partial"), std::string::npos);
}

// The log filled its disk with a torn chunk and stayed .partial, so `log
// verify` failed; recording off was said twice (by the log writer and the
// recorder) and repeated in the summary, which counted the steps never
// recorded as "dropped"; a resume on the still full disk left an empty
// .partial behind and said it twice again.
TEST_F(FullDisk, RecordingStopsOnAFullDiskSaysItOncePublishesTheLogAndAResumeTrainsWithoutIt) {
  remount("256k");  // a few hundred KB of log: a fraction of a second of CartPole
  const std::string runs = work_ + "/runs";
  const std::string experience = disk_ + "/experience";

  // stop.frames: the log fills its disk long before (every step trained on is
  // recorded); chunks of 16 KiB, so that several fit before it is full.
  const std::string out = run_to_exit({"run", kVtrace, "runs_dir=" + runs, "record.enabled=true",
                                       "record.dir=\"" + experience + "\"", "record.chunk_kb=16",
                                       "stop.frames=200000", "stop.seconds=0", "stop.return_mean=0", "log.interval_s=0.25",
                                       "log.progress=false"},
                                      "learner.log");
  expect_recording_off_said_once(out, experience);
  EXPECT_EQ(count(out, "No space left on device"), 1u) << out;
  // The summary counts the steps recording off never wrote, as such.
  EXPECT_EQ(lines_with(out, "steps unrecorded").size(), 1u) << out;
  EXPECT_EQ(out.find("dropped"), std::string::npos) << out;
  // The segment being written is published with its whole chunks.
  expect_log_verifies(experience, work_ + "/verify.log");
  const std::string dir = list_dirs(runs).at(0);
  const std::string metrics = dir + "/metrics.jsonl";
  EXPECT_EQ(lines_that_are_not_json(metrics, work_ + "/python.log"), "");
  EXPECT_EQ(count(read_file(metrics), "\"event\": \"record_off\""), 1u);
  const std::vector<MetricsRow> rows = read_metrics(metrics);
  EXPECT_EQ(last(rows, "record_dropped_steps"), 0);
  EXPECT_GT(last(rows, "record_unrecorded_steps"), 0);
  EXPECT_GT(last(rows, "record_steps"), 0);
  const double trained = last(rows, "optimizer_steps");

  // The disk is still full at --resume: the log cannot even take a new
  // segment's header. The run trains on without it, saying so once.
  fill();
  const std::string resumed =
      run_to_exit({"run", "--resume", dir, "stop.frames=400000", "log.progress=false"}, "resumed.log");
  expect_recording_off_said_once(resumed, experience);
  EXPECT_EQ(count(resumed, "No space left on device"), 1u) << resumed;
  EXPECT_GT(last(read_metrics(metrics), "optimizer_steps"), trained) << resumed;
  expect_log_verifies(experience, work_ + "/verify-resumed.log");
  EXPECT_EQ(lines_that_are_not_json(metrics, work_ + "/python.log"), "");
  EXPECT_EQ(count(read_file(metrics), "\"event\": \"record_off\""), 2u);  // one per run
}

// The number in `text` just before `suffix` (" optimizer steps"), or -1.
int64_t number_before(const std::string& text, const std::string& suffix) {
  const size_t end = text.find(suffix);
  if (end == std::string::npos) return -1;
  size_t start = end;
  while (start > 0 && std::isdigit(static_cast<unsigned char>(text[start - 1]))) --start;
  return start == end ? -1 : std::stoll(text.substr(start, end - start));
}

// The run directory itself on the full disk (the log in RUN_DIR/experience):
// --resume stopped at once, unable to rewrite config.lua, before training.
TEST_F(FullDisk, AResumeWhoseRunDirectoryIsOnAFullDiskTrainsWithoutRecording) {
  run_to_exit({"run", kVtrace, "runs_dir=" + disk_, "record.enabled=true", "record.chunk_kb=16",
               "stop.frames=30000", "stop.seconds=0", "stop.return_mean=0", "log.progress=false"},
              "learner.log");
  const std::string dir = list_dirs(disk_).at(0);
  const std::string experience = dir + "/experience";

  fill();
  // Exit code 0: the final checkpoint fails, but the first run's is there to resume from.
  const std::string out =
      run_to_exit({"run", "--resume", dir, "stop.frames=60000", "log.progress=false"}, "resumed.log");
  // The run directory's own files fail too, each said once; recording off is one line.
  expect_recording_off_said_once(out, experience);
  EXPECT_EQ(count(out, "config.lua keeps the config from before"), 1u) << out;
  // Trained: more optimizer steps at the stop than in the checkpoint it resumed.
  const int64_t resumed_at = number_before(out, " steps)\n");
  ASSERT_GT(resumed_at, 0) << out;
  EXPECT_GT(number_before(out, " optimizer steps"), resumed_at) << out;
  expect_log_verifies(experience, work_ + "/verify.log");
}

}  // namespace
}  // namespace moonseed::testing
