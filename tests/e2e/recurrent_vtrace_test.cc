// Recurrent V-trace end to end (docs/lua-api.md "Recurrent actor-critics"): the real
// `moonseed` binary with examples/cartpole_nv_vtrace_lstm.lua, real actor processes over Unix
// sockets. On tasks that need memory the recurrent agent learns what the same settings with a
// feed-forward net cannot (loose bounds: one seed each, far apart), and its run evaluates and
// exports like any other.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/e2e/process.h"

namespace moonseed::testing {
namespace {

const std::string kBinary = MOONSEED_BINARY;
const std::string kExample = std::string(MOONSEED_SOURCE_DIR) + "/examples/cartpole_nv_vtrace_lstm.lua";

// The mean return of the last 100 training episodes when a run of `frames` ends.
double final_return(const std::vector<std::string>& overrides, int64_t frames, const std::string& prefix,
                    std::string* run_dir = nullptr) {
  std::vector<std::string> fixed = {"log.interval_s=1", "stop.return_mean=0", "seed=3"};
  fixed.insert(fixed.end(), overrides.begin(), overrides.end());
  TrainingRun run(kExample, fixed, prefix);
  ChildProcess learner(run.args({"stop.frames=" + std::to_string(frames)}), run.log);
  const std::optional<int> code = learner.wait(240);
  EXPECT_EQ(code, std::optional<int>(0)) << read_file(run.log);
  const auto rows = run.metrics();
  EXPECT_FALSE(rows.empty()) << read_file(run.log);
  if (run_dir != nullptr) *run_dir = run.run_dir();
  return rows.empty() ? 0.0 : last(rows, "return_mean");
}

const std::vector<std::string> kFeedForward = {"model.kind=mlp", "model.hidden={64,64}", "model.activation=tanh"};

TEST(RecurrentVtrace, LearnsCartPoleNoVelocityWhereTheFeedForwardNetCannot) {
  const double recurrent = final_return({}, 1500000, "moonseed-rvt-nv");
  const double feed_forward = final_return(kFeedForward, 1500000, "moonseed-rvt-nv-ff");
  EXPECT_GE(recurrent, 200) << "feed-forward: " << feed_forward;
  EXPECT_LE(feed_forward, 100) << "recurrent: " << recurrent;
}

// CueRecall-v0: a cue shown at the first step only, an answer asked for after a delay; +1 for the
// right one, -1 otherwise (chance: -0.5 with 4 cues).
TEST(RecurrentVtrace, RecallsACueThatTheFeedForwardNetCannotSee) {
  const std::vector<std::string> cue = {"env.id=CueRecall-v0"};
  std::vector<std::string> ff = kFeedForward;
  ff.insert(ff.end(), cue.begin(), cue.end());
  const double recurrent = final_return(cue, 1000000, "moonseed-rvt-cue");
  const double feed_forward = final_return(ff, 1000000, "moonseed-rvt-cue-ff");
  EXPECT_GE(recurrent, 0.5) << "feed-forward: " << feed_forward;
  EXPECT_LE(feed_forward, 0.0) << "recurrent: " << recurrent;
}

TEST(RecurrentVtrace, ItsRunEvaluatesAndExports) {
  std::string run_dir;
  final_return({}, 50000, "moonseed-rvt-eval", &run_dir);
  ASSERT_FALSE(run_dir.empty());
  const Finished eval = run_to_end({kBinary, "eval", run_dir, "--episodes", "3"}, run_dir + "/eval.log", 240);
  EXPECT_EQ(eval.exit_code, std::optional<int>(0)) << eval.output;
  EXPECT_NE(eval.output.find("return: mean "), std::string::npos) << eval.output;
  const std::string file = run_dir + "/policy.pt";
  const Finished exported = run_to_end({kBinary, "export", run_dir, "-o", file}, run_dir + "/export.log", 240);
  EXPECT_EQ(exported.exit_code, std::optional<int>(0)) << exported.output;
  EXPECT_NE(read_file(file).find("MoonseedRecurrentPolicy"), std::string::npos) << exported.output;
}

}  // namespace
}  // namespace moonseed::testing
