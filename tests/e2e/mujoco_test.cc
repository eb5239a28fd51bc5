// End-to-end: MuJoCo envs in real runs of the real `moonseed` binary, with actor processes that
// step libmujoco (docs/envs-mujoco.md).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>

#include "tests/e2e/process.h"

namespace moonseed::testing {
namespace {

const std::string kExample = std::string(MOONSEED_SOURCE_DIR) + "/examples/mujoco_inverted_pendulum.lua";

double best_return(const std::vector<MetricsRow>& rows) {
  double best = -1;
  for (const MetricsRow& row : rows) {
    if (row.count("return_mean")) best = std::max(best, row.at("return_mean"));
  }
  return best;
}

// The shipped example learns: a policy that acts at random keeps the pole up for about 10 to 30
// steps; within 600k frames the learned one holds it for hundreds (it reached 500 after ~350k
// frames in development runs). Stops on frames or on that return, never on time.
TEST(MujocoEndToEnd, VTraceLearnsTheInvertedPendulum) {
  TrainingRun run(kExample, {"log.interval_s=0.5", "stop.return_mean=300"});
  ChildProcess learner(run.args({"stop.frames=600000"}), run.log);
  ASSERT_EQ(learner.wait(600), std::optional<int>(0)) << read_file(run.log);
  const std::vector<MetricsRow> rows = run.metrics();
  EXPECT_GT(last(rows, "optimizer_steps"), 0) << read_file(run.log);
  EXPECT_GE(best_return(rows), 150) << read_file(run.log);
}

// MuJoCo/Model-v0 runs a model file the script names by a path relative to itself: the learner
// and its actor processes (started in another directory) load the same file.
TEST(MujocoEndToEnd, ModelV0LoadsTheFileTheScriptNamesInEveryActor) {
  const std::string dir = make_temp_dir("moonseed-mujoco-e2e");
  std::filesystem::create_directories(dir + "/robots");
  std::filesystem::copy_file(std::string(MOONSEED_SOURCE_DIR) + "/envs/mujoco/models/inverted_pendulum.xml",
                             dir + "/robots/cart.xml");
  std::ofstream(dir + "/walk.lua")
      << "return { env = { id = 'MuJoCo/Model-v0', model = 'robots/cart.xml' },\n"
         "         topology = { actors = 2, envs_per_actor = 4, groups_per_actor = 2 },\n"
         "         learner = { batch = 4, unroll = 20 } }\n";
  TrainingRun run(dir + "/walk.lua", {"log.interval_s=0.25"});
  ChildProcess learner(run.args({"stop.frames=4000"}), run.log);
  ASSERT_EQ(learner.wait(120), std::optional<int>(0)) << read_file(run.log);
  EXPECT_GT(last(run.metrics(), "frames"), 1000) << read_file(run.log);
  EXPECT_NE(read_file(run.run_dir() + "/config.lua").find(dir + "/robots/cart.xml"), std::string::npos);
}

}  // namespace
}  // namespace moonseed::testing
