// Checkpoints damaged after they were written (docs/reliability.md "A damaged
// checkpoint"): bits flipped in a weight or in R2D2's replay, a file
// truncated or replaced by garbage, in the run directory of a real run; then
// real `moonseed run --resume`, `eval` and `export` processes. Each damage is
// done to a copy of one run's directory, so the runs are few.
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/e2e/checkpoint_files.h"
#include "tests/e2e/process.h"

namespace moonseed::testing {
namespace {

namespace fs = std::filesystem;

std::string name_of(const std::string& path) { return fs::path(path).filename().string(); }

// A run of `script` stopped (SIGINT, a final checkpoint) once it has written
// three checkpoints, two of them of steps past 0, each sealed. (The final
// checkpoint is not counted on: on a loaded machine no step may come between
// the last periodic one and the stop, and then it rewrites that one.)
std::unique_ptr<TrainingRun> run_with_checkpoints(const std::string& script, std::vector<std::string> fixed,
                                                  const std::string& prefix) {
  for (const char* o :
       {"log.interval_s=0.25", "checkpoint.interval_s=1", "checkpoint.keep=100", "log.progress=false"}) {
    fixed.push_back(o);
  }
  fixed.push_back(kUntilStopped);
  auto run = std::make_unique<TrainingRun>(script, fixed, prefix);
  ChildProcess learner(run->args({}), run->log);
  const auto trained = [&] {
    if (run->run_dir().empty()) return false;
    const std::vector<std::string> all = checkpoint_paths(run->run_dir());
    size_t n = 0;
    for (const std::string& path : all) n += checkpoint_step(name_of(path)) > 0;
    return all.size() >= 3 && n >= 2;
  };
  EXPECT_TRUE(eventually(180, trained)) << read_file(run->log);
  learner.signal(SIGINT);
  EXPECT_EQ(learner.wait(120), std::optional<int>(0)) << read_file(run->log);
  return run;
}

class CheckpointDamage : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    vtrace_ = run_with_checkpoints(kVtraceExample, {"stop.return_mean=0"}, "moonseed-ckpt-damage").release();
    source_ = new std::string(vtrace_->run_dir());
  }
  static void TearDownTestSuite() {
    delete vtrace_;
    delete source_;
    vtrace_ = nullptr;
    source_ = nullptr;
  }

  // A fresh copy of the V-trace run's directory for this test.
  std::string copy_of_vtrace_run() const {
    const std::string to = make_temp_dir("moonseed-ckpt-damage-copy") + "/run";
    copy_run_directory(*source_, to);
    return to;
  }

  static TrainingRun* vtrace_;
  static std::string* source_;  // its run directory, never damaged
};

TrainingRun* CheckpointDamage::vtrace_ = nullptr;
std::string* CheckpointDamage::source_ = nullptr;

// `moonseed run --resume DIR` that stops at once: no frame past `frames` (the
// checkpoint expected to be resumed), so no training step either, and its
// final checkpoint holds the weights it resumed.
Finished resume_and_stop(const std::string& dir, int64_t frames) {
  return run_to_end({MOONSEED_BINARY, "run", "--resume", dir, "stop.frames=" + std::to_string(frames)},
                    dir + "/resume.log", 180);
}

// The resume row of metrics.jsonl names `expected` and holds its counters.
void expect_resume_row(const std::string& dir, const std::string& expected, const HeldCheckpoint& held) {
  const std::vector<MetricsLine> resumes = events(read_metrics_lines(dir + "/metrics.jsonl"), "resume");
  ASSERT_EQ(resumes.size(), 1u);
  EXPECT_EQ(resumes[0].checkpoint, "checkpoints/" + name_of(expected)) << resumes[0].text;
  EXPECT_EQ(resumes[0].numbers.at("optimizer_steps"), held.optimizer_steps) << resumes[0].text;
  EXPECT_EQ(resumes[0].numbers.at("frames"), held.frames) << resumes[0].text;
  if (held.replay_size >= 0) {
    EXPECT_EQ(resumes[0].numbers.at("replay_size"), held.replay_size) << resumes[0].text;
  }
}

// A weight's exponent flipped in the newest checkpoint: it used to load
// silently (weights 0.088 -> 90.5). The resume skips it, says why, and goes
// on from the previous one, whose weights the run then holds.
TEST_F(CheckpointDamage, AFlippedWeightInTheNewestIsSkippedAndThePreviousOneResumedWithItsWeights) {
  const std::string dir = copy_of_vtrace_run();
  const std::vector<std::string> all = checkpoint_paths(dir);
  ASSERT_GE(all.size(), 3u);
  const std::string damaged = all.back();
  const std::string previous = all[all.size() - 2];
  const HeldCheckpoint expected = load_checkpoint(dir, previous);
  flip_a_tensor_exponent(damaged);

  const Finished resumed = resume_and_stop(dir, expected.frames);
  ASSERT_EQ(resumed.exit_code, std::optional<int>(0)) << resumed.output;
  EXPECT_NE(resumed.output.find("moonseed: skipping checkpoint " + damaged + ": CRC-32C mismatch in " + damaged +
                                " (file 0x"),
            std::string::npos)
      << resumed.output;
  EXPECT_NE(resumed.output.find("; it was damaged after it was written\n"), std::string::npos) << resumed.output;
  EXPECT_NE(resumed.output.find("moonseed: resumed " + previous + " "), std::string::npos) << resumed.output;
  expect_resume_row(dir, previous, expected);
  // The run's final checkpoint (no step trained) holds the weights it resumed.
  const std::string final_checkpoint = dir + "/checkpoints/ckpt-" + std::to_string(expected.optimizer_steps) + ".pt";
  EXPECT_EQ(load_checkpoint(dir, final_checkpoint).weights_hash, expected.weights_hash);
}

// Without a manifest (an older build's checkpoints), a newest checkpoint
// LibTorch cannot read is skipped with its reason; the previous one loads,
// said to be unverified. With manifests, truncation is caught by its size.
TEST_F(CheckpointDamage, ATruncatedOrGarbageNewestFallsBackToTheNewestGoodOne) {
  const std::string dir = copy_of_vtrace_run();
  const std::vector<std::string> all = checkpoint_paths(dir);
  ASSERT_GE(all.size(), 3u);
  const std::string previous = all[all.size() - 2];
  const HeldCheckpoint expected = load_checkpoint(dir, previous);
  const uintmax_t size = fs::file_size(all.back());
  fs::resize_file(all.back(), size / 2);

  Finished resumed = resume_and_stop(dir, expected.frames);
  ASSERT_EQ(resumed.exit_code, std::optional<int>(0)) << resumed.output;
  EXPECT_NE(resumed.output.find("moonseed: skipping checkpoint " + all.back() + ": " + all.back() + " is " +
                                std::to_string(size / 2) + " bytes, its manifest records " + std::to_string(size) +
                                "; it was truncated or overwritten after it was written\n"),
            std::string::npos)
      << resumed.output;
  EXPECT_NE(resumed.output.find("moonseed: resumed " + previous + " "), std::string::npos) << resumed.output;

  // The same directory as an older build left it: no manifests, and garbage
  // where the newest checkpoint was.
  const std::string older = dir + "-older-build";
  fs::create_directories(older);
  fs::copy_file(dir + "/config.lua", older + "/config.lua");
  fs::create_directories(older + "/checkpoints");
  for (const std::string& path : checkpoint_paths(*source_)) {
    fs::copy_file(path, older + "/checkpoints/" + name_of(path));
  }
  const std::vector<std::string> old_all = checkpoint_paths(older);
  {
    std::mt19937 bytes(7);
    std::ofstream garbage(old_all.back(), std::ios::binary | std::ios::trunc);
    for (uintmax_t i = 0; i < size; ++i) garbage.put(static_cast<char>(bytes()));
  }
  const std::string old_previous = old_all[old_all.size() - 2];
  resumed = resume_and_stop(older, expected.frames);
  ASSERT_EQ(resumed.exit_code, std::optional<int>(0)) << resumed.output;
  EXPECT_NE(resumed.output.find("moonseed: skipping checkpoint " + old_all.back() + ": checkpoint " + old_all.back() +
                                " cannot be read (truncated or corrupt): "),
            std::string::npos)
      << resumed.output;
  EXPECT_NE(resumed.output.find("moonseed: " + old_previous + " has no manifest (" + old_previous +
                                ".sum; a checkpoint of an older build): it is loaded unverified\n"),
            std::string::npos)
      << resumed.output;
  EXPECT_NE(resumed.output.find("moonseed: resumed " + old_previous + " "), std::string::npos) << resumed.output;
}

// Every checkpoint damaged: exit 1, each one listed with why, nothing resumed.
TEST_F(CheckpointDamage, WhenNoCheckpointIsGoodTheResumeExits1ListingEachOne) {
  const std::string dir = copy_of_vtrace_run();
  const std::vector<std::string> all = checkpoint_paths(dir);
  for (const std::string& path : all) flip_a_tensor_exponent(path);
  const Finished resumed = resume_and_stop(dir, 1);
  ASSERT_EQ(resumed.exit_code, std::optional<int>(1)) << resumed.output;
  EXPECT_NE(resumed.output.find(dir + " has no checkpoint that can be resumed; tried, newest first:"),
            std::string::npos)
      << resumed.output;
  for (const std::string& path : all) {
    EXPECT_NE(resumed.output.find("\n  " + path + ": CRC-32C mismatch in " + path), std::string::npos)
        << path << "\n" << resumed.output;
  }
  EXPECT_EQ(resumed.output.find("moonseed: resumed "), std::string::npos) << resumed.output;
  EXPECT_TRUE(events(read_metrics_lines(dir + "/metrics.jsonl"), "resume").empty());
}

// A checkpoint chosen on the command line is never swapped for another.
TEST_F(CheckpointDamage, EvalAndExportOfADamagedCheckpointFailWithTheCrcMessage) {
  const std::string dir = copy_of_vtrace_run();
  const std::vector<std::string> all = checkpoint_paths(dir);
  const std::string damaged = all[all.size() - 2];
  flip_a_tensor_exponent(damaged);
  const std::string step = std::to_string(checkpoint_step(name_of(damaged)));
  const std::vector<std::vector<std::string>> commands = {
      {MOONSEED_BINARY, "eval", dir, "--checkpoint", step, "--episodes", "1"},
      {MOONSEED_BINARY, "export", dir, "--checkpoint", step, "-o", dir + "/policy.pt"}};
  for (const std::vector<std::string>& command : commands) {
    const Finished f = run_to_end(command, dir + "/" + command[1] + ".log", 120);
    EXPECT_EQ(f.exit_code, std::optional<int>(1)) << f.output;
    EXPECT_NE(f.output.find("checkpoint " + damaged + " is damaged: CRC-32C mismatch in " + damaged + " (file 0x"),
              std::string::npos)
        << f.output;
    EXPECT_NE(f.output.find("pick another with --checkpoint N (checkpoints there: "), std::string::npos) << f.output;
  }
  EXPECT_FALSE(fs::exists(dir + "/policy.pt"));
  // The newest, undamaged, still exports.
  const Finished newest =
      run_to_end({MOONSEED_BINARY, "export", dir, "-o", dir + "/policy.pt"}, dir + "/newest.log", 120);
  EXPECT_EQ(newest.exit_code, std::optional<int>(0)) << newest.output;
}

// Without --checkpoint, eval and export take the newest good one, as --resume does, saying
// which they skipped and why.
TEST_F(CheckpointDamage, EvalAndExportWithoutACheckpointSkipADamagedNewestForThePreviousOne) {
  const std::string dir = copy_of_vtrace_run();
  const std::vector<std::string> all = checkpoint_paths(dir);
  ASSERT_GE(all.size(), 3u);
  const std::string damaged = all.back();
  const std::string previous = all[all.size() - 2];
  flip_a_tensor_exponent(damaged);
  const Finished eval = run_to_end({MOONSEED_BINARY, "eval", dir, "--episodes", "1"}, dir + "/eval.log", 120);
  EXPECT_EQ(eval.exit_code, std::optional<int>(0)) << eval.output;
  EXPECT_NE(eval.output.find("moonseed: skipping checkpoint " + damaged + ": CRC-32C mismatch in " + damaged),
            std::string::npos)
      << eval.output;
  EXPECT_NE(eval.output.find(", " + previous + " (step "), std::string::npos) << "eval plays the previous one: " << eval.output;
  const Finished exported =
      run_to_end({MOONSEED_BINARY, "export", dir, "-o", dir + "/policy.pt"}, dir + "/export.log", 120);
  EXPECT_EQ(exported.exit_code, std::optional<int>(0)) << exported.output;
  EXPECT_NE(exported.output.find("moonseed: skipping checkpoint " + damaged + ": "), std::string::npos)
      << exported.output;
  EXPECT_TRUE(fs::exists(dir + "/policy.pt"));
  // Every one damaged: nothing to fall back on, and it says so.
  for (const std::string& path : all) {
    if (path != damaged) flip_a_tensor_exponent(path);
  }
  const Finished none = run_to_end({MOONSEED_BINARY, "eval", dir, "--episodes", "1"}, dir + "/none.log", 120);
  EXPECT_EQ(none.exit_code, std::optional<int>(1)) << none.output;
  EXPECT_NE(none.output.find("every checkpoint of " + dir + " is damaged"), std::string::npos) << none.output;
}

// R2D2's replay beside the newest checkpoint flipped: the resume skips the
// checkpoint, naming the replay, and resumes the previous one with its replay.
TEST(CheckpointDamageR2d2, AFlippedReplayIsSkippedAndThePreviousCheckpointResumedWithItsReplay) {
  const std::unique_ptr<TrainingRun> run = run_with_checkpoints(
      kR2d2Example, {"stop.eval_return_mean=0", "r2d2.min_fill=64", "r2d2.capacity=1000"}, "moonseed-ckpt-damage-r2d2");
  const std::string dir = run->run_dir();
  const std::vector<std::string> all = checkpoint_paths(dir);
  ASSERT_GE(all.size(), 3u);
  const std::string damaged = all.back() + ".replay";
  const std::string previous = all[all.size() - 2];
  const HeldCheckpoint expected = load_checkpoint(dir, previous);
  flip_a_tensor_exponent(damaged);

  const Finished resumed = resume_and_stop(dir, expected.frames);
  ASSERT_EQ(resumed.exit_code, std::optional<int>(0)) << resumed.output;
  EXPECT_NE(resumed.output.find("moonseed: skipping checkpoint " + all.back() + ": CRC-32C mismatch in " + damaged +
                                " (file 0x"),
            std::string::npos)
      << resumed.output;
  EXPECT_NE(resumed.output.find("moonseed: resumed " + previous + " "), std::string::npos) << resumed.output;
  EXPECT_EQ(resumed.output.find("empty replay"), std::string::npos) << resumed.output;
  expect_resume_row(dir, previous, expected);
}

}  // namespace
}  // namespace moonseed::testing
