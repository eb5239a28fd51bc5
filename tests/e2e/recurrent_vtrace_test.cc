// Recurrent V-trace end to end (docs/lua-api.md "Recurrent actor-critics"): the real
// `moonseed` binary with examples/cartpole_nv_vtrace_lstm.lua, real actor processes over Unix
// sockets. On tasks that need memory the recurrent agent learns what the same settings with a
// feed-forward net cannot, and its run evaluates and exports like any other. Loose bounds, one
// seed each, on the best mean return of 100 episodes a run reaches: V-trace's return on
// CartPoleNoVelocity swings (six runs of 1.5M frames two at a time, 2026-11-28: best 235-395,
// last 134-281; the feed-forward net's best 45), and on CueRecall the recurrent agent reached 1.0
// by 0.25M frames, the feed-forward one ends near -0.1 and peaks at 0.1-0.34.
#include <algorithm>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/e2e/process.h"

namespace moonseed::testing {
namespace {

const std::string kBinary = MOONSEED_BINARY;
const std::string kExample = std::string(MOONSEED_SOURCE_DIR) + "/examples/cartpole_nv_vtrace_lstm.lua";

// The example with the LSTM's layers replaced by a tanh MLP of 64 x 64, in `dir`.
std::string feed_forward_example(const std::string& dir) {
  const std::string path = dir + "/feed_forward.lua";
  std::ofstream(path) << replaced(read_file(kExample), "model = ms.layers { ms.nn.linear(64), ms.nn.tanh(), ms.nn.lstm(64) },",
                                  "model = ms.mlp { hidden = { 64, 64 }, activation = \"tanh\" },");
  return path;
}

// The best mean return of 100 training episodes over a run of `frames`.
double best_return(const std::string& script, const std::vector<std::string>& overrides, int64_t frames,
                    const std::string& prefix, std::string* run_dir = nullptr) {
  std::vector<std::string> fixed = {"log.interval_s=1", "stop.return_mean=0", "seed=3"};
  fixed.insert(fixed.end(), overrides.begin(), overrides.end());
  TrainingRun run(script, fixed, prefix);
  ChildProcess learner(run.args({"stop.frames=" + std::to_string(frames)}), run.log);
  EXPECT_EQ(learner.wait(240), std::optional<int>(0)) << read_file(run.log);
  const auto rows = run.metrics();
  EXPECT_FALSE(rows.empty()) << read_file(run.log);
  if (run_dir != nullptr) *run_dir = run.run_dir();
  double best = rows.empty() ? 0.0 : -1e300;
  for (const auto& row : rows) {
    if (const auto it = row.find("return_mean"); it != row.end()) best = std::max(best, it->second);
  }
  return best;
}

TEST(RecurrentVtrace, LearnsCartPoleNoVelocityWhereTheFeedForwardNetCannot) {
  const std::string dir = make_temp_dir("moonseed-rvt-nv");
  const double recurrent = best_return(kExample, {}, 1500000, "moonseed-rvt-nv");
  const double feed_forward = best_return(feed_forward_example(dir), {}, 1500000, "moonseed-rvt-nv-ff");
  EXPECT_GE(recurrent, 150) << "feed-forward: " << feed_forward;
  EXPECT_LE(feed_forward, 100) << "recurrent: " << recurrent;
}

// CueRecall-v0: a cue shown at the first step only, an answer asked for after a delay; +1 for the
// right one, -1 otherwise (chance: -0.5 with 4 cues).
TEST(RecurrentVtrace, RecallsACueThatTheFeedForwardNetCannotSee) {
  const std::string dir = make_temp_dir("moonseed-rvt-cue");
  const std::vector<std::string> cue = {"env.id=CueRecall-v0"};
  const double recurrent = best_return(kExample, cue, 400000, "moonseed-rvt-cue");
  const double feed_forward = best_return(feed_forward_example(dir), cue, 400000, "moonseed-rvt-cue-ff");
  EXPECT_GE(recurrent, 0.8) << "feed-forward: " << feed_forward;
  // The feed-forward net's best 100-episode mean: 0.10 to 0.34 in four runs (2026-11-28).
  EXPECT_LE(feed_forward, 0.5) << "recurrent: " << recurrent;
}

TEST(RecurrentVtrace, ItsRunEvaluatesAndExports) {
  std::string run_dir;
  best_return(kExample, {}, 50000, "moonseed-rvt-eval", &run_dir);
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
