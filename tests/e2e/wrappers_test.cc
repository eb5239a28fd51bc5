// env.wrappers in a real run (docs/env-wrappers.md): `moonseed run` trains CartPole with wrappers
// given on the command line; real actor processes wrap their envs from the Welcome's text and
// the learner records (and builds its model for) the wrapped spec. Stops are on frames, never on
// time.
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/e2e/process.h"

namespace moonseed::testing {
namespace {

const std::string kSource = MOONSEED_SOURCE_DIR;

TEST(Wrappers, CartPoleTrainsWithStackedFramesATimeLimitAndClippedRewards) {
  TrainingRun run(kSource + "/examples/cartpole_vtrace.lua",
                  {"log.interval_s=0.5", "stop.frames=20000", "record.enabled=true", "topology.actors=2",
                   "env.wrappers=frame_stack n=2;time_limit max_steps=100;clip_reward low=-1 high=0.5"},
                  "moonseed-wrappers");
  ChildProcess learner(run.args({}), run.log);
  ASSERT_EQ(learner.wait(240), std::optional<int>(0)) << read_file(run.log);

  // The learner's spec, as its experience log keeps it: two CartPole frames, 100 steps.
  const std::string info_log = run.runs_dir + "/info.txt";
  ChildProcess info({MOONSEED_BINARY, "log", "info", run.run_dir()}, info_log);
  ASSERT_EQ(info.wait(60), std::optional<int>(0)) << read_file(info_log);
  const std::string info_text = read_file(info_log);
  EXPECT_NE(info_text.find("\"shape\":[8]"), std::string::npos) << info_text;
  EXPECT_NE(info_text.find("\"max_episode_steps\":100"), std::string::npos) << info_text;
  EXPECT_NE(info_text.find("f32[8]"), std::string::npos) << info_text;

  // Episodes end at the wrapper's limit at the latest; returns count the env's own rewards (1
  // a step), not the clipped 0.5 the learner trained on.
  const std::vector<MetricsRow> rows = run.metrics();
  ASSERT_FALSE(rows.empty()) << read_file(run.log);
  const MetricsRow& last = rows.back();
  ASSERT_TRUE(last.count("length_mean") && last.count("return_mean")) << read_file(run.log);
  EXPECT_GT(last.at("length_mean"), 0);
  EXPECT_LE(last.at("length_mean"), 100);
  EXPECT_EQ(last.at("return_mean"), last.at("length_mean"));
  // The run's config.lua keeps the list with every parameter.
  EXPECT_NE(read_file(run.run_dir() + "/config.lua").find("{kind = \"frame_stack\", n = 2}"), std::string::npos);
}

}  // namespace
}  // namespace moonseed::testing
