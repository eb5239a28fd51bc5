// The APPO agent: each batch is trained in appo.epochs x appo.minibatches optimizer steps (each
// through the gradient hook a learner group all-reduces in) and counted once; the ratio's
// behaviour log-probs are the actors', frozen across the passes; and the registry knows it.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "engine/appo/config/appo_config.h"
#include "engine/config/section_registry.h"
#include "engine/learner/agent.h"
#include "engine/learner/agent_registry.h"
#include "engine/learner/algorithms.h"
#include "envs/env.h"
#include "tests/engine/learner/served.h"

namespace moonseed::engine {
namespace {

ExperimentConfig appo_config(int epochs, int minibatches) {
  ExperimentConfig c = small_config();
  c.algo = "appo";
  c.learner.batch = 4;
  c.learner.unroll = 3;
  c.learner.queue_capacity = 16;
  c.section<AppoConfig>().epochs = epochs;
  c.section<AppoConfig>().minibatches = minibatches;
  c.section<AppoConfig>().kl_coef = 1;
  return c;
}

double metric(const TrainReport& report, const std::string& name) {
  const auto it = std::find_if(report.metrics.begin(), report.metrics.end(),
                               [&](const Metric& m) { return m.name == name; });
  EXPECT_NE(it, report.metrics.end()) << name;
  return it == report.metrics.end() ? -1 : it->value;
}

// Two CartPole envs playing one long episode each (longer than the 13 steps played): 13
// observations make 4 unrolls of 3 steps per env, 2 batches.
void play(Agent& agent) { play_episodes(agent, 13, {1000, 1000}); }

TEST(AppoAgent, ABatchTakesEpochsTimesMinibatchesStepsAndCountsItsFramesOnce) {
  torch::manual_seed(4);
  const ExperimentConfig config = appo_config(3, 2);
  const envs::EnvSpec spec = envs::make_env("CartPole-v1")->spec();
  std::unique_ptr<Agent> agent = make_agent(config, spec, torch::kCPU);
  int hook_calls = 0;
  agent->set_gradient_hook([&](const std::vector<torch::Tensor>&) { ++hook_calls; });
  play(*agent);
  const uint64_t before = agent->weights_hash();
  ASSERT_TRUE(agent->await_batch());
  const TrainReport report = agent->train(config, 1e-3, 0);
  EXPECT_TRUE(report.applied);
  EXPECT_EQ(hook_calls, 3 * 2);
  EXPECT_EQ(report.frames, 4 * 3) << "a batch's frames count once, not once per pass";
  // Every metric it reports is one its registration declares (docs/metrics.md comes from those).
  const std::vector<MetricDoc> declared = algorithm_metrics("appo");
  for (const Metric& m : report.metrics) {
    EXPECT_TRUE(std::any_of(declared.begin(), declared.end(), [&](const MetricDoc& d) { return m.name == d.name; }))
        << m.name;
  }
  EXPECT_NE(agent->weights_hash(), before);
  // A learner of a group with no batch this round all-reduces as often as the others.
  hook_calls = 0;
  EXPECT_TRUE(agent->train_without_batch(config, 1e-3).applied);
  EXPECT_EQ(hook_calls, 3 * 2);
  agent->close();
}

// On-policy unrolls (the weights have not moved since acting): one pass sees every ratio at 1,
// so the KL estimate is 0 and nothing is clipped. With several passes at a large learning rate
// the policy moves between them while the behaviour's log-probs stay the actors': the ratio
// leaves 1 and the KL estimate is positive.
TEST(AppoAgent, TheRatioIsAgainstTheActorsFrozenLogProbsAcrossPasses) {
  const envs::EnvSpec spec = envs::make_env("CartPole-v1")->spec();
  for (const int epochs : {1, 4}) {
    torch::manual_seed(8);
    ExperimentConfig config = appo_config(epochs, 1);
    std::unique_ptr<Agent> agent = make_agent(config, spec, torch::kCPU);
    play(*agent);
    ASSERT_TRUE(agent->await_batch());
    const TrainReport report = agent->train(config, /*lr=*/0.05, 0);
    ASSERT_TRUE(report.applied);
    if (epochs == 1) {
      EXPECT_NEAR(metric(report, "loss_kl"), 0.0, 1e-9);
      EXPECT_EQ(metric(report, "clip_fraction"), 0.0);
      EXPECT_NEAR(metric(report, "mean_rho"), 1.0, 1e-5);
    } else {
      EXPECT_GT(metric(report, "loss_kl"), 1e-4);
      EXPECT_NEAR(metric(report, "mean_rho"), 1.0, 1e-5) << "targets come from the first pass's weights";
    }
    agent->close();
  }
}

// A recurrent policy: each minibatch unrolls its unrolls from the states they were acted with
// (episodes end inside unrolls). At a learning rate of 0 the weights never move, so every pass's
// ratio is exactly pi/mu = 1 only if the minibatch's start states are its own unrolls'.
TEST(AppoAgent, ARecurrentNetsMinibatchesUnrollFromTheirOwnStartStates) {
  torch::manual_seed(9);
  ExperimentConfig config = appo_config(2, 2);
  config.model.kind = "layers";
  config.model.layers = {{"linear", 16}, {"tanh"}, {"lstm", 8}};
  config.learner.unroll = 5;
  config.learner.queue_capacity = 32;
  const envs::EnvSpec spec = envs::make_env("CartPole-v1")->spec();
  std::unique_ptr<Agent> agent = make_agent(config, spec, torch::kCPU);
  play_episodes(*agent, 41, {7, 4});
  int batches = 0;
  while (agent->await_batch_for(std::chrono::milliseconds(200))) {
    const TrainReport report = agent->train(config, /*lr=*/0.0, 0);
    ASSERT_TRUE(report.applied);
    EXPECT_NEAR(metric(report, "mean_rho"), 1.0, 1e-5) << "batch " << batches;
    EXPECT_NEAR(metric(report, "loss_kl"), 0.0, 1e-9) << "batch " << batches;
    EXPECT_EQ(metric(report, "clip_fraction"), 0.0) << "batch " << batches;
    ++batches;
  }
  EXPECT_EQ(batches, 4);  // 2 envs x 8 unrolls of 5 steps, 4 unrolls a batch
  agent->close();
}

TEST(AppoAgent, IsRegisteredWithItsSectionExportAndEvaluationText) {
  const std::vector<std::string> algos = registered_algorithms();
  EXPECT_NE(std::find(algos.begin(), algos.end(), "appo"), algos.end());
  ExperimentConfig config = appo_config(2, 4);
  EXPECT_EQ(eval_acting(config).text, "sampled");
  config.section<AppoConfig>().eval_greedy = true;
  EXPECT_TRUE(eval_acting(config).greedy);
  EXPECT_NE(export_signatures().find("appo: forward(obs)"), std::string::npos) << export_signatures();
}

}  // namespace
}  // namespace moonseed::engine
