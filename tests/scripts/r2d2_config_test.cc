// The r2d2 section of experiment scripts (algo = "r2d2"): the shipped recipes
// and example load, the recurrent model is accepted there, and rules between
// fields are refused at the line that set them.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "engine/r2d2/config/r2d2_config.h"
#include "scripts/loader/experiment_loader.h"
#include "tests/scripts/loader_test_util.h"
#include "tests/scripts/temp_dir.h"

namespace moonseed::scripts {
namespace {

using testing::TempDir;
using testing::issues_of;

// An R2D2 experiment whose line 3 is `line3` (a field of the experiment table).
std::string r2d2_script(TempDir& dir, const std::string& line3) {
  return dir.write("r2d2.lua",
                   "local ms = require 'moonseed'\n"
                   "return ms.experiment { extends = 'moonseed.recipes.classic_r2d2',\n"  // 2
                   "  " + line3 + ",\n"                                                       // 3
                   "}\n");
}

TEST(R2d2Config, TheExampleLoadsWithTheRecipeChainAndARecurrentModel) {
  const engine::ExperimentConfig c = load_experiment(std::string(MOONSEED_SOURCE_DIR) + "/examples/cartpole_r2d2.lua");
  EXPECT_EQ(c.algo, "r2d2");
  ASSERT_FALSE(c.model.layers.empty());
  EXPECT_EQ(c.model.layers.back().kind, "lstm");
  EXPECT_EQ(c.model.layers.back().out, 64);
  EXPECT_EQ(c.section<engine::R2d2Config>().burn_in, 8);       // classic_r2d2
  EXPECT_EQ(c.section<engine::R2d2Config>().eta, 0.9);         // r2d2_base
  EXPECT_EQ(c.optimizer.eps, 1e-3);   // r2d2_base
  EXPECT_EQ(c.optimizer.lr, 1e-3);    // classic_r2d2 over r2d2_base's 1e-4
  EXPECT_EQ(c.topology.eval_envs_per_actor, 2);
  EXPECT_EQ(c.stop.eval_return_mean, 475);
}

TEST(R2d2Config, TheMemoryExamplesDifferOnlyInTheLstm) {
  const std::string examples = std::string(MOONSEED_SOURCE_DIR) + "/examples/";
  const engine::ExperimentConfig lstm = load_experiment(examples + "cartpole_memory_r2d2.lua");
  const engine::ExperimentConfig ff = load_experiment(examples + "cartpole_memory_ff.lua");
  EXPECT_EQ(lstm.env.id, "CartPoleNoVelocity-v1");
  EXPECT_EQ(ff.env.id, "CartPoleNoVelocity-v1");
  EXPECT_EQ(lstm.model.layers.back().kind, "lstm");
  for (const models::LayerSpec& layer : ff.model.layers) EXPECT_NE(layer.kind, "lstm");
  EXPECT_EQ(lstm.section<engine::R2d2Config>().trace, ff.section<engine::R2d2Config>().trace);
  EXPECT_EQ(lstm.optimizer.lr, ff.optimizer.lr);
  EXPECT_EQ(lstm.stop.eval_return_mean, ff.stop.eval_return_mean);
}

TEST(R2d2Config, TheBaseRecipesAtariNetIsRefusedOnVectorObservationsNamingTheEnv) {
  TempDir dir;
  const std::string path = dir.write("atari.lua",
                                     "return { extends = 'moonseed.recipes.r2d2_base', env = { id = 'CartPole-v1' } }\n");
  const auto issues = issues_of(path);
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_NE(issues[0].message.find("(for CartPole-v1)"), std::string::npos) << issues[0].message;
}

TEST(R2d2Config, AFeedForwardModelIsAcceptedAndABoxActionSpaceIsNot) {
  TempDir dir;
  EXPECT_TRUE(issues_of(r2d2_script(dir, "model = ms.layers { ms.nn.linear(32), ms.nn.relu() }")).empty());
  const auto issues = issues_of(r2d2_script(dir, "env = { id = 'Pendulum-v1' }"));
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_NE(issues[0].message.find("Discrete"), std::string::npos) << issues[0].message;
  EXPECT_NE(issues[0].message.find("Pendulum-v1"), std::string::npos) << issues[0].message;
}

TEST(R2d2Config, APeriodLongerThanASequenceIsRefusedAtItsLine) {
  TempDir dir;
  const auto issues = issues_of(r2d2_script(dir, "r2d2 = { period = 40 }"));  // burn_in 8 + trace 24
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].field, "r2d2.period");
  EXPECT_EQ(issues[0].line, 3);
  EXPECT_NE(issues[0].message.find("period (40) exceeds burn_in + trace (32)"), std::string::npos)
      << issues[0].message;
}

TEST(R2d2Config, MinFillMustLieBetweenTheBatchAndTheCapacity) {
  TempDir dir;
  auto issues = issues_of(r2d2_script(dir, "r2d2 = { min_fill = 5000 }"));  // capacity 4000
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].field, "r2d2.min_fill");
  EXPECT_NE(issues[0].message.find("exceeds capacity (4000)"), std::string::npos) << issues[0].message;
  issues = issues_of(r2d2_script(dir, "r2d2 = { min_fill = 16 }"));  // batch 32
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_NE(issues[0].message.find("batch (32) exceeds min_fill (16)"), std::string::npos) << issues[0].message;
}

TEST(R2d2Config, EvaluationEnvsMustLeaveTrainingEnvs) {
  TempDir dir;
  const auto issues = issues_of(r2d2_script(dir, "topology = { envs_per_actor = 4, eval_envs_per_actor = 4 }"));
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_NE(issues[0].message.find("must be below envs_per_actor (4)"), std::string::npos) << issues[0].message;
}

TEST(R2d2Config, StoppingOnEvaluationReturnsNeedsEvaluationEnvs) {
  TempDir dir;
  const auto issues = issues_of(r2d2_script(dir, "topology = { eval_envs_per_actor = 0 }"),
                                {"stop.eval_return_mean=100"});
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].field, "stop.eval_return_mean");
  EXPECT_NE(issues[0].message.find("set topology.eval_envs_per_actor >= 1"), std::string::npos)
      << issues[0].message;
}

}  // namespace
}  // namespace moonseed::scripts
