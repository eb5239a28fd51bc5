// Evaluation envs in a real V-trace CartPole run, and best.pt from them (docs/eval.md "best.pt"):
// metrics.jsonl reports the evaluation envs' return, best.json follows it, and a checkpoint asked
// for with `moonseed ctl RUN checkpoint` is offered for best.pt like the periodic ones.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/e2e/process.h"

namespace moonseed::testing {
namespace {

namespace fs = std::filesystem;

const std::string kBinary = MOONSEED_BINARY;
const std::string kExample = std::string(MOONSEED_SOURCE_DIR) + "/examples/cartpole_vtrace.lua";

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }
const std::string kEvalMetric = "\"metric\": \"eval_return_mean\"";

// What `moonseed ctl RUN_DIR ARGS...` printed, and its exit code.
Finished ctl(const std::string& run_dir, const std::vector<std::string>& args, const std::string& log) {
  std::vector<std::string> argv = {kBinary, "ctl", run_dir};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_to_end(argv, log, 120);
}

// One V-trace run with one evaluation env per actor and no periodic checkpoint: the only
// checkpoints are the one the test asks for with ctl and the final one.
TEST(BestCheckpoint, VtraceEvaluationEnvsReportTheirReturnAndCtlCheckpointsCanBecomeBestPt) {
  TrainingRun run(kExample,
                  {kUntilStopped, "topology.eval_envs_per_actor=1", "checkpoint.interval_s=0", "log.interval_s=0.25",
                   "log.progress=false", "--no-watch"},
                  "moonseed-best");
  ChildProcess learner(run.args({}), run.log);
  // An evaluation episode has ended once a row holds eval_return_mean with a value.
  ASSERT_TRUE(eventually(120, [&] { return !run.run_dir().empty() && last(run.metrics(), "eval_episodes") > 0; }))
      << read_file(run.log);
  const std::string dir = run.run_dir();
  EXPECT_FALSE(fs::exists(dir + "/best.json"));  // no checkpoint yet

  const Finished asked = ctl(dir, {"checkpoint"}, run.runs_dir + "/ctl.log");
  ASSERT_EQ(asked.exit_code, std::optional<int>(0)) << asked.output;
  const std::string path = asked.output.substr(1, asked.output.find('"', 1) - 1);
  const std::string name = fs::path(path).filename().string();
  ASSERT_TRUE(fs::exists(path)) << asked.output;
  // The first checkpoint with a value is the best so far: best.pt is the ctl checkpoint, at once.
  const std::string json = read_file(dir + "/best.json");
  EXPECT_TRUE(contains(json, kEvalMetric)) << json;
  EXPECT_TRUE(contains(json, "\"checkpoint\": \"" + name + "\"")) << json;
  EXPECT_TRUE(read_file(dir + "/best.pt") == read_file(path));  // bytes, not printed
  const std::vector<MetricsRow> events = read_events(dir + "/metrics.jsonl", "checkpoint");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].at("best"), 1);

  ASSERT_EQ(ctl(dir, {"stop"}, run.runs_dir + "/ctl.log").exit_code, std::optional<int>(0));
  ASSERT_EQ(learner.wait(120), std::optional<int>(0)) << read_file(run.log);

  // Every tick row has the evaluation envs' counters beside the training ones; the final
  // checkpoint was compared on eval_return_mean too.
  int ticks = 0;
  double eval_return = -1;
  for (const MetricsRow& row : run.metrics()) {
    if (row.count("event") || !row.count("frames")) continue;
    ++ticks;
    EXPECT_TRUE(row.count("eval_episodes")) << "tick " << ticks;
    if (row.count("eval_return_mean")) eval_return = row.at("eval_return_mean");
  }
  EXPECT_GT(ticks, 0);
  EXPECT_GE(eval_return, 8);  // CartPole's shortest episodes last 8 steps
  EXPECT_EQ(read_events(dir + "/metrics.jsonl", "checkpoint").size(), 2u);
  EXPECT_TRUE(contains(read_file(dir + "/best.json"), kEvalMetric));
  std::error_code ec;
  fs::remove_all(run.runs_dir, ec);
}

}  // namespace
}  // namespace moonseed::testing
