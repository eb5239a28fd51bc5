// MinAtar through `moonseed run`: the shipped examples train on a game end to end (real actor
// processes over Unix sockets). V-trace must learn Breakout well past a random policy (0.41 per
// episode over 100 random episodes of the reference package, sticky actions 0.1); R2D2 must run
// its MinAtar recipe (conv torso under an LSTM) and fill its replay. Stops are on return and
// frames, never on time, so a loaded machine only makes them slower.
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/e2e/process.h"

namespace moonseed::testing {
namespace {

const std::string kSource = MOONSEED_SOURCE_DIR;

TEST(MinAtar, VtraceLearnsBreakoutWellPastARandomPolicy) {
  // Random play scores 0.41; stop once the last 100 episodes average 1.2, or fail at 4M frames.
  TrainingRun run(kSource + "/examples/minatar_vtrace.lua",
                  {"log.interval_s=1", "stop.return_mean=1.2", "stop.frames=4000000"},
                  "moonseed-minatar");
  ChildProcess learner(run.args({}), run.log);
  ASSERT_EQ(learner.wait(280), std::optional<int>(0)) << read_file(run.log);
  const std::vector<MetricsRow> rows = run.metrics();
  ASSERT_FALSE(rows.empty()) << read_file(run.log);
  // It stopped on the return rule; the final row counts the episodes that ended while the run
  // stopped too, so it may sit a little under the bound, still well above random.
  EXPECT_NE(read_file(run.log).find("stopped: return_mean"), std::string::npos) << read_file(run.log);
  EXPECT_GE(rows.back().at("return_mean"), 1.0) << read_file(run.log);
  EXPECT_LT(rows.back().at("frames"), 4000000) << read_file(run.log);
  EXPECT_NE(read_file(run.log).find("MinAtar/Breakout-v1"), std::string::npos) << read_file(run.log);
}

TEST(MinAtar, R2d2RecipeTrainsOnAGameFromItsReplay) {
  TrainingRun run(kSource + "/examples/minatar_r2d2.lua",
                  {"log.interval_s=0.5", "stop.frames=40000", "env.id=MinAtar/Freeway-v1"},
                  "moonseed-minatar");
  ChildProcess learner(run.args({}), run.log);
  ASSERT_EQ(learner.wait(240), std::optional<int>(0)) << read_file(run.log);
  double steps = 0, frames = 0, replay = 0;
  for (const MetricsRow& row : run.metrics()) {
    if (row.count("optimizer_steps")) steps = std::max(steps, row.at("optimizer_steps"));
    if (row.count("frames")) frames = std::max(frames, row.at("frames"));
    if (row.count("replay_size")) replay = std::max(replay, row.at("replay_size"));
  }
  EXPECT_GE(frames, 40000) << read_file(run.log);
  EXPECT_GE(replay, 500) << "the replay never reached min_fill\n" << read_file(run.log);
  EXPECT_GT(steps, 0) << "no optimizer step from the replay\n" << read_file(run.log);
}

}  // namespace
}  // namespace moonseed::testing
