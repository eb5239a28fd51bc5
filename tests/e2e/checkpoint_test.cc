// Checkpoints and --resume of real `moonseed run` processes: a learner killed
// as each file of a checkpoint appears, resumes written into metrics.jsonl,
// and checkpoint names that say the step their content holds
// (docs/reliability.md "Checkpoints and resume").
#include <signal.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "engine/run/checkpoint_manifest.h"
#include "tests/e2e/checkpoint_files.h"
#include "tests/e2e/process.h"

namespace moonseed::testing {
namespace {

namespace fs = std::filesystem;

const std::string kBinary = MOONSEED_BINARY;
const std::string kR2d2 = std::string(MOONSEED_SOURCE_DIR) + "/examples/cartpole_r2d2.lua";
const std::string kVtrace = std::string(MOONSEED_SOURCE_DIR) + "/examples/cartpole_vtrace.lua";

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Which file of an R2D2 checkpoint a name is, by the longest suffix it ends with.
std::string kind_of(const std::string& name) {
  for (const char* kind : {".pt.sum.partial", ".pt.sum", ".pt.replay.partial", ".pt.replay", ".pt.partial", ".pt"}) {
    if (ends_with(name, kind)) return kind;
  }
  return "";
}

// The learner's output since `from` (the log holds every process of a test).
std::string output_since(const TrainingRun& run, size_t from) {
  const std::string out = read_file(run.log);
  return from < out.size() ? out.substr(from) : "";
}

// SIGKILLs `learner` as soon as a file of `kind` appears in its checkpoints/
// while a complete checkpoint is there (so that a resume has one to start
// from). Returns the name that appeared, or "" when none did in time.
std::string kill_as_a_file_appears(ChildProcess& learner, DirectoryWatch& watch, const std::string& run_dir,
                                   const std::string& kind) {
  bool armed = !newest_complete_r2d2_checkpoint(run_dir).empty();
  while (std::optional<std::string> name = watch.next(90)) {
    if (armed && kind_of(*name) == kind) {
      learner.signal(SIGKILL);
      return *name;
    }
    if (!armed) armed = !newest_complete_r2d2_checkpoint(run_dir).empty();
  }
  return "";
}

// Each kill lands right after one kind of file appears: the replay's partial
// file, the replay, the model file's partial file, the model file, the
// manifest's partial file. The model file used to appear first, so a kill
// before the replay was renamed left a checkpoint that --resume took, with an
// empty replay; a checkpoint whose manifest is not there yet is skipped.
TEST(CheckpointFaults, AKillAsEachCheckpointFileAppearsResumesTheNewestCompleteCheckpointWithItsReplay) {
  TrainingRun run(kR2d2,
                  {"log.interval_s=0.25", "stop.eval_return_mean=0", "r2d2.min_fill=64", "r2d2.capacity=1000",
                   "checkpoint.interval_s=1", kUntilStopped, "log.progress=false"},
                  "moonseed-ckpt-kill");
  auto learner = std::make_unique<ChildProcess>(run.args({}), run.log);
  ASSERT_TRUE(eventually(60, [&] { return fs::is_directory(run.run_dir() + "/checkpoints"); })) << read_file(run.log);
  const std::string dir = run.run_dir();
  auto watch = std::make_unique<DirectoryWatch>(dir + "/checkpoints");
  int resumes = 0;
  for (const std::string kind : {".pt.replay.partial", ".pt.replay", ".pt.partial", ".pt", ".pt.sum.partial"}) {
    SCOPED_TRACE("killed as a " + kind + " file appeared");
    const std::string appeared = kill_as_a_file_appears(*learner, *watch, dir, kind);
    ASSERT_FALSE(appeared.empty()) << read_file(run.log);
    ASSERT_TRUE(learner->wait(30).has_value());
    watch.reset();

    const std::string expected = newest_complete_r2d2_checkpoint(dir);
    ASSERT_FALSE(expected.empty()) << ::testing::PrintToString(file_names(dir + "/checkpoints"));
    const HeldCheckpoint held = load_checkpoint(dir, expected);
    std::vector<std::string> leftovers;
    for (const std::string& name : file_names(dir + "/checkpoints")) {
      if (ends_with(name, ".partial")) leftovers.push_back(name);
    }

    watch = std::make_unique<DirectoryWatch>(dir + "/checkpoints");
    const size_t log_from = read_file(run.log).size();
    learner = std::make_unique<ChildProcess>(std::vector<std::string>{kBinary, "run", "--resume", dir}, run.log);
    ++resumes;
    ASSERT_TRUE(eventually(90, [&] { return count(output_since(run, log_from), "moonseed: resumed ") == 1; }))
        << output_since(run, log_from);
    const std::string out = output_since(run, log_from);
    EXPECT_NE(out.find("moonseed: resumed " + expected + " "), std::string::npos)
        << "expected " << expected << "; files: " << ::testing::PrintToString(file_names(dir + "/checkpoints"))
        << "\n" << out;
    EXPECT_EQ(out.find("empty replay"), std::string::npos) << out;
    ASSERT_TRUE(eventually(30, [&] {
      return static_cast<int>(events(read_metrics_lines(dir + "/metrics.jsonl"), "resume").size()) == resumes;
    })) << "no resume event in metrics.jsonl";
    const MetricsLine resume = events(read_metrics_lines(dir + "/metrics.jsonl"), "resume").back();
    EXPECT_EQ(resume.checkpoint, "checkpoints/" + fs::path(expected).filename().string()) << resume.text;
    EXPECT_EQ(resume.numbers.at("replay_size"), held.replay_size) << resume.text;
    EXPECT_EQ(resume.numbers.at("optimizer_steps"), held.optimizer_steps) << resume.text;
    EXPECT_EQ(resume.numbers.at("frames"), held.frames) << resume.text;
    // What the kill left half-written is removed when the next run starts.
    for (const std::string& name : leftovers) EXPECT_NE(out.find(name), std::string::npos) << name << "\n" << out;
  }
  learner->signal(SIGINT);
  ASSERT_EQ(learner->wait(60), std::optional<int>(0)) << read_file(run.log);
  for (const std::string& name : file_names(dir + "/checkpoints")) {
    EXPECT_FALSE(ends_with(name, ".partial")) << name;
    if (kind_of(name) == ".pt") {
      EXPECT_TRUE(fs::exists(dir + "/checkpoints/" + name + ".replay")) << name;
    } else if (kind_of(name) == ".pt.replay" || kind_of(name) == ".pt.sum") {
      const std::string model = name.substr(0, name.rfind('.'));
      EXPECT_TRUE(fs::exists(dir + "/checkpoints/" + model)) << name;
    }
  }
}

// Three runs of one directory, each stopped cleanly and resumed: each resume
// is a row of its own, holding what the previous run's stop row held, and no
// counter goes back (trained_frames and eval_episodes used to restart at 0).
TEST(CheckpointFaults, EachResumeWritesAResumeEventAndNoCounterGoesBack) {
  TrainingRun run(kR2d2,
                  {"log.interval_s=0.25", "stop.eval_return_mean=0", "r2d2.min_fill=64", "r2d2.capacity=1000",
                   "log.progress=false"},
                  "moonseed-ckpt-resume");
  // 10000 frames a run: acting waits for learning (r2d2.samples_per_insert = 1),
  // so each trains; after 30000 (900 steps of each env, episodes end by 500)
  // the evaluation envs have ended episodes.
  ChildProcess first(run.args({"stop.frames=10000"}), run.log);
  ASSERT_EQ(first.wait(120), std::optional<int>(0)) << read_file(run.log);
  for (int resume = 0; resume < 2; ++resume) {
    ChildProcess next({kBinary, "run", "--resume", run.run_dir(), frames_past_last_row(run, 10000)}, run.log);
    ASSERT_EQ(next.wait(120), std::optional<int>(0)) << read_file(run.log);
  }
  const std::vector<MetricsLine> lines = read_metrics_lines(run.run_dir() + "/metrics.jsonl");
  ASSERT_EQ(events(lines, "resume").size(), 2u) << read_file(run.log);
  ASSERT_EQ(events(lines, "stop").size(), 3u);
  for (size_t i = 1; i < lines.size(); ++i) {
    if (lines[i].event != "resume") continue;
    // A resume goes on from the checkpoint the previous run ended with, its stop row.
    const MetricsLine& stop = lines[i - 1];
    ASSERT_EQ(stop.event, "stop") << stop.text;
    EXPECT_EQ(lines[i].checkpoint,
              "checkpoints/ckpt-" + std::to_string(static_cast<int64_t>(stop.numbers.at("optimizer_steps"))) + ".pt");
    for (const char* key : {"time_s", "frames", "episodes", "optimizer_steps", "trained_frames", "eval_episodes"}) {
      EXPECT_EQ(lines[i].numbers.at(key), stop.numbers.at(key)) << key << "\n" << stop.text << "\n" << lines[i].text;
    }
  }
  for (const char* key : {"time_s", "frames", "trained_frames", "eval_episodes"}) {
    double previous = -1;
    for (const MetricsLine& line : lines) {
      if (!line.numbers.count(key)) continue;
      EXPECT_GE(line.numbers.at(key), previous) << key << " went back at: " << line.text;
      previous = line.numbers.at(key);
    }
  }
  EXPECT_GT(lines.back().numbers.at("trained_frames"), 0);
  EXPECT_GT(lines.back().numbers.at("eval_episodes"), 0);
}

// ckpt-N.pt holds N optimizer steps: the step in the name used to be read
// before the save waited for the training step in flight.
TEST(CheckpointFaults, EveryCheckpointHoldsTheStepItsNameSays) {
  TrainingRun run(kVtrace, {"log.interval_s=0.25", "stop.return_mean=0", "checkpoint.interval_s=1",
                            "checkpoint.keep=100", kUntilStopped, "log.progress=false"},
                  "moonseed-ckpt-names");
  ChildProcess learner(run.args({}), run.log);
  ASSERT_TRUE(eventually(60, [&] { return !run.run_dir().empty() && last(run.metrics(), "optimizer_steps") > 0; }))
      << read_file(run.log);
  const std::string dir = run.run_dir() + "/checkpoints";
  const auto checkpoints = [&] {
    size_t n = 0;
    if (fs::is_directory(dir)) {
      for (const std::string& name : file_names(dir)) n += kind_of(name) == ".pt" ? 1 : 0;
    }
    return n;
  };
  // Three written every second while training goes on, one more asked for on
  // the control socket, then the final one at the stop.
  ASSERT_TRUE(eventually(120, [&] { return checkpoints() >= 3; })) << read_file(run.log);
  ChildProcess ctl({kBinary, "ctl", run.run_dir(), "checkpoint"}, run.runs_dir + "/ctl.log");
  EXPECT_EQ(ctl.wait(60), std::optional<int>(0)) << read_file(run.runs_dir + "/ctl.log");
  ASSERT_TRUE(eventually(120, [&] { return checkpoints() >= 4; })) << read_file(run.log);
  learner.signal(SIGINT);
  ASSERT_EQ(learner.wait(120), std::optional<int>(0)) << read_file(run.log);

  size_t checked = 0;
  for (const std::string& name : file_names(dir)) {
    if (kind_of(name) == ".pt.sum") continue;  // each checkpoint's manifest, checked below
    const int64_t step = checkpoint_step(name);
    ASSERT_GE(step, 0) << name;
    EXPECT_EQ(load_checkpoint(run.run_dir(), dir + "/" + name).optimizer_steps, step) << name;
    // Sealed by its manifest, written last, and as it was written.
    const engine::CheckpointCheck check = engine::verify_checkpoint(dir + "/" + name);
    EXPECT_TRUE(check.sealed) << name;
    EXPECT_TRUE(check.good()) << check.damage;
    ++checked;
  }
  EXPECT_GE(checked, 4u) << ::testing::PrintToString(file_names(dir));
}

}  // namespace
}  // namespace moonseed::testing
