// `moonseed eval` and best.pt on real runs (docs/eval.md): a short CartPole R2D2 run with
// evaluation envs keeps best.pt and best.json at its checkpoints; eval plays its policy and
// films it (ffmpeg), ffprobe reads the video back; a MinAtar run is filmed as a .gif and a
// MountainCarContinuous run as an .mp4; and the errors a user can meet.
#include <csignal>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/e2e/process.h"
#include "tests/e2e/suite_run.h"

namespace moonseed::testing {
namespace {

namespace fs = std::filesystem;

const std::string kR2d2 = std::string(MOONSEED_SOURCE_DIR) + "/examples/cartpole_r2d2.lua";
const std::string kMinAtar = std::string(MOONSEED_SOURCE_DIR) + "/examples/minatar_vtrace.lua";
const std::string kVtrace = std::string(MOONSEED_SOURCE_DIR) + "/examples/cartpole_vtrace.lua";

using Output = Finished;

const std::string kCheckpointEvent = "\"event\": \"checkpoint\"";

int count(const std::string& text, const std::string& part) {
  int n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

// The string after "key": "..." in a JSON line ("" when absent).
std::string string_field(const std::string& line, const std::string& key) {
  const std::string marker = "\"" + key + "\": \"";
  const size_t at = line.find(marker);
  if (at == std::string::npos) return "";
  const size_t begin = at + marker.size();
  return line.substr(begin, line.find('"', begin) - begin);
}

// ffprobe's "key=value" lines for the first video stream: width, height, frames decoded.
std::string probe(const std::string& file, const std::string& log) {
  ChildProcess process({"/usr/bin/ffprobe", "-v", "error", "-count_frames", "-select_streams", "v:0", "-show_entries",
                        "stream=width,height,nb_read_frames", "-of", "default=noprint_wrappers=1", file},
                       log);
  EXPECT_EQ(process.wait(120), std::optional<int>(0)) << read_file(log);
  return read_file(log);
}

// The sum of the lengths eval printed ("episode K: return R, length L").
int64_t printed_steps(const std::string& output, int* episodes) {
  std::istringstream in(output);
  int64_t steps = 0;
  *episodes = 0;
  for (std::string line; std::getline(in, line);) {
    const size_t at = line.find(", length ");
    if (line.rfind("episode ", 0) != 0 || at == std::string::npos) continue;
    steps += std::stoll(line.substr(at + 9));
    ++*episodes;
  }
  return steps;
}

class EvalRun : public SuiteRun<EvalRun> {
 protected:
  static void SetUpTestSuite() {
    // R2D2 (evaluation envs are an R2D2 feature): a small replay that fills at once, as
    // tests/e2e/r2d2_test.cc; a checkpoint every second, until three have been written.
    TrainingRun& run = start(kR2d2,
                             {kUntilStopped, "stop.eval_return_mean=0", "r2d2.min_fill=64", "r2d2.capacity=1000",
                              "log.progress=false", "log.interval_s=0.25", "checkpoint.keep=20",
                              "checkpoint.interval_s=1"},
                             "moonseed-eval");
    ChildProcess learner(run.args({}), run.log);
    ASSERT_TRUE(eventually(120, [&] {
      return !run.run_dir().empty() && count(read_file(run.run_dir() + "/metrics.jsonl"), kCheckpointEvent) >= 3;
    })) << read_file(run.log);
    learner.signal(SIGINT);
    ASSERT_EQ(learner.wait(240), std::optional<int>(0)) << read_file(run.log);
    taken();
  }
};

// best.json holds the highest eval_return_mean of the run's checkpoints (the "checkpoint"
// event rows), names that checkpoint, and best.pt is that file's bytes.
TEST_F(EvalRun, BestPtIsTheCheckpointWithTheHighestEvalReturn) {
  std::ifstream in(dir_ + "/metrics.jsonl");
  double best = -1e300;
  std::string best_name;
  int checkpoints = 0;
  for (std::string line; std::getline(in, line);) {
    if (!contains(line, kCheckpointEvent)) continue;
    ++checkpoints;
    EXPECT_EQ(string_field(line, "metric"), "eval_return_mean") << line;
    const size_t at = line.find("\"value\": ");
    ASSERT_NE(at, std::string::npos) << line;
    if (line.compare(at + 9, 4, "null") == 0) continue;  // no evaluation episode had ended yet
    const double value = std::stod(line.substr(at + 9));
    if (value > best) best = value, best_name = string_field(line, "checkpoint");
  }
  ASSERT_GE(checkpoints, 4) << read_file(run_->log);  // three periodic ones and the final one
  ASSERT_FALSE(best_name.empty());
  const std::string json = read_file(dir_ + "/best.json");
  EXPECT_EQ(string_field(json, "metric"), "eval_return_mean") << json;
  EXPECT_EQ(string_field(json, "checkpoint"), best_name) << json;
  EXPECT_DOUBLE_EQ(std::stod(json.substr(json.find("\"value\": ") + 9)), best) << json;
  EXPECT_TRUE(read_file(dir_ + "/best.pt") == read_file(dir_ + "/checkpoints/" + best_name));  // bytes, not printed
  EXPECT_FALSE(fs::exists(dir_ + "/best.pt.partial"));

  // export takes it.
  const Output e = run_moonseed({"export", dir_, "--checkpoint", "best", "-o", run_->runs_dir + "/best_policy.pt"},
                                run_->runs_dir + "/export_best.log");
  EXPECT_EQ(e.exit_code, std::optional<int>(0)) << e.output;
  EXPECT_TRUE(contains(e.output, "best.pt of ")) << e.output;
  EXPECT_TRUE(fs::is_regular_file(run_->runs_dir + "/best_policy.pt"));
}

// A resumed run goes on from best.json: a best value no checkpoint of the resume reaches keeps
// best.pt and best.json as they were.
TEST_F(EvalRun, ResumeGoesOnFromBestJson) {
  const std::string kept = "{\"metric\": \"eval_return_mean\", \"value\": 1000000, \"frames\": 1, \"checkpoint\": "
                           "\"ckpt-0.pt\"}\n";
  std::ofstream(dir_ + "/best.json") << kept;
  const std::string best_pt = read_file(dir_ + "/best.pt");
  const int before = count(read_file(dir_ + "/metrics.jsonl"), kCheckpointEvent);
  ChildProcess resumed({MOONSEED_BINARY, "run", "--resume", dir_, frames_past_last_row(*run_, 3000)}, run_->log);
  ASSERT_EQ(resumed.wait(240), std::optional<int>(0)) << read_file(run_->log);
  const std::string metrics = read_file(dir_ + "/metrics.jsonl");
  EXPECT_GT(count(metrics, kCheckpointEvent), before) << metrics;
  EXPECT_EQ(count(metrics, "\"best\": 1"), count(metrics.substr(0, metrics.rfind("\"event\": \"resume\"")), "\"best\": 1"));
  EXPECT_EQ(read_file(dir_ + "/best.json"), kept);
  EXPECT_TRUE(read_file(dir_ + "/best.pt") == best_pt);  // bytes, not printed
}

// Two episodes filmed: one frame per reset and per step, at CartPole's 600 x 400.
TEST_F(EvalRun, PlaysEpisodesAndFilmsThem) {
  const std::string video = run_->runs_dir + "/cartpole.mp4";
  const Output o = run_moonseed({"eval", dir_, "--checkpoint", "best", "--episodes", "2", "--greedy", "--video", video},
                                run_->runs_dir + "/eval_video.log");
  ASSERT_EQ(o.exit_code, std::optional<int>(0)) << o.output;
  int episodes = 0;
  const int64_t steps = printed_steps(o.output, &episodes);
  EXPECT_EQ(episodes, 2) << o.output;
  EXPECT_TRUE(contains(o.output, "return: mean ")) << o.output;
  const std::string frames = std::to_string(steps + 2);
  EXPECT_TRUE(contains(o.output, "wrote " + video + " (" + frames + " frames, 600x400, 30 fps)")) << o.output;
  const std::string probed = probe(video, run_->runs_dir + "/probe.log");
  EXPECT_TRUE(contains(probed, "width=600\nheight=400\nnb_read_frames=" + frames)) << probed;
  EXPECT_FALSE(fs::exists(video + ".partial"));

  // Without video: 3 greedy episodes, a summary; the same seed plays the same episodes.
  const Output a = run_moonseed({"eval", dir_, "--episodes", "3", "--greedy", "--seed", "5"}, run_->runs_dir + "/a.log");
  const Output b = run_moonseed({"eval", dir_, "--episodes", "3", "--greedy", "--seed", "5"}, run_->runs_dir + "/b.log");
  ASSERT_EQ(a.exit_code, std::optional<int>(0)) << a.output;
  EXPECT_EQ(printed_steps(a.output, &episodes), printed_steps(b.output, &episodes));
  EXPECT_EQ(episodes, 3);
  EXPECT_TRUE(contains(a.output, "episode 3: return ")) << a.output;
}

TEST_F(EvalRun, ErrorsSayWhatIsWrongAndLeaveNoFile) {
  const std::string out = run_->runs_dir + "/errors";
  fs::create_directories(out);
  Output o = run_moonseed({"eval", dir_, "--video", out + "/no/such/dir/v.mp4"}, out + "/unwritable.log");
  EXPECT_EQ(o.exit_code, std::optional<int>(1)) << o.output;
  EXPECT_TRUE(contains(o.output, "cannot create " + out + "/no/such/dir/v.mp4.partial: No such file or directory"))
      << o.output;
  o = run_moonseed({"eval", dir_, "--video", out + "/v.avi"}, out + "/avi.log");
  EXPECT_EQ(o.exit_code, std::optional<int>(1)) << o.output;
  EXPECT_TRUE(contains(o.output, "--video writes .mp4 or .gif files")) << o.output;
  o = run_moonseed({"eval", dir_, "--episodes", "0"}, out + "/zero.log");
  EXPECT_EQ(o.exit_code, std::optional<int>(1)) << o.output;
  EXPECT_TRUE(contains(o.output, "--episodes must be in [1, 10000]")) << o.output;

  // An env that cannot render (CueRecall has no renderer): a copy of the run whose config names
  // it is refused before its checkpoint is even read, and no file is left.
  const std::string other = run_->runs_dir + "/no-render";
  fs::create_directories(other + "/checkpoints");
  for (const auto& entry : fs::directory_iterator(dir_ + "/checkpoints")) {
    fs::copy_file(entry.path(), other + "/checkpoints/" + entry.path().filename().string());
  }
  const std::string config = read_file(dir_ + "/config.lua");
  ASSERT_TRUE(contains(config, "\"CartPole-v1\"")) << config;
  std::ofstream(other + "/config.lua") << replaced(config, "\"CartPole-v1\"", "\"CueRecall-v0\"");
  o = run_moonseed({"eval", other, "--video", out + "/v.mp4"}, out + "/no_render.log");
  EXPECT_EQ(o.exit_code, std::optional<int>(1)) << o.output;
  EXPECT_TRUE(contains(o.output, "env CueRecall-v0 cannot render, so --video cannot draw it")) << o.output;
  EXPECT_FALSE(fs::exists(out + "/v.mp4"));
  EXPECT_FALSE(fs::exists(out + "/v.mp4.partial"));

  // ffmpeg missing: PATH without it.
  std::vector<std::string> argv = {"/usr/bin/env", "PATH=/nonexistent", MOONSEED_BINARY, "eval", dir_, "--video", out + "/v.mp4"};
  ChildProcess process(argv, out + "/no_ffmpeg.log");
  EXPECT_EQ(process.wait(120), std::optional<int>(1));
  EXPECT_TRUE(contains(read_file(out + "/no_ffmpeg.log"), "--video needs ffmpeg, which is not on PATH"))
      << read_file(out + "/no_ffmpeg.log");
  EXPECT_FALSE(fs::exists(out + "/v.mp4.partial"));
}

// A short run of `script` that ends on stop.frames, then `moonseed eval --episodes 2 --video
// FILE` on it: one frame per reset and per step, of `size` ("WxH"), as eval says and ffprobe
// reads back.
void expect_filmed(const std::string& script, const std::vector<std::string>& overrides, const std::string& file,
                   const std::string& size) {
  TrainingRun run(script, overrides, "moonseed-eval-film");
  ChildProcess learner(run.args({}), run.log);
  ASSERT_EQ(learner.wait(240), std::optional<int>(0)) << read_file(run.log);
  const std::string video = run.runs_dir + "/" + file;
  const Output o = run_moonseed({"eval", run.run_dir(), "--episodes", "2", "--video", video}, run.runs_dir + "/eval.log");
  ASSERT_EQ(o.exit_code, std::optional<int>(0)) << o.output;
  int episodes = 0;
  const std::string frames = std::to_string(printed_steps(o.output, &episodes) + 2);
  EXPECT_EQ(episodes, 2) << o.output;
  EXPECT_TRUE(contains(o.output, "(" + frames + " frames, " + size + ", 30 fps)")) << o.output;
  const std::string probed = probe(video, run.runs_dir + "/probe.log");
  const std::string width = size.substr(0, size.find('x')), height = size.substr(size.find('x') + 1);
  EXPECT_TRUE(contains(probed, "width=" + width + "\nheight=" + height + "\nnb_read_frames=" + frames)) << probed;
  std::error_code ec;
  fs::remove_all(run.runs_dir, ec);
}

// A MinAtar policy filmed as a GIF: 10 x 16 pixels a side.
TEST(EvalFilms, MinAtarAsAGif) {
  expect_filmed(kMinAtar, {"stop.frames=3000", "log.progress=false"}, "breakout.gif", "160x160");
}

// MountainCarContinuous (V-trace, box actions) renders as MountainCar does: 600 x 400. Its
// episodes cut at 50 steps keep the video short.
TEST(EvalFilms, MountainCarContinuous) {
  expect_filmed(kVtrace,
                {"env.id=\"MountainCarContinuous-v0\"", "env.options.max_episode_steps=50", "stop.frames=2000",
                 "log.progress=false"},
                "mountain_car.mp4", "600x400");
}

}  // namespace
}  // namespace moonseed::testing
