// The V-trace agent's evaluation envs (topology.eval_envs_per_actor): their
// steps act with the policy but never reach a trained batch, their episodes are
// reported apart by slot, and vtrace.eval_greedy makes them act on the mode.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "engine/learner/agent.h"
#include "engine/learner/agent_registry.h"
#include "engine/vtrace/config/vtrace_config.h"
#include "envs/env.h"
#include "tests/engine/learner/served.h"

namespace moonseed::engine {
namespace {

// One actor of two CartPole envs, env 1 evaluating; batches of one unroll of 2 steps.
ExperimentConfig eval_config() {
  ExperimentConfig c = small_config();
  c.topology.eval_envs_per_actor = 1;
  c.learner.queue_capacity = 16;  // more than every unroll below: observe() never blocks
  return c;
}

class VtraceAgentEval : public ::testing::Test {
 protected:
  void SetUp() override { torch::manual_seed(5); }

  // One step of `slot`: observe x (CartPole: 4 floats of `value`) with `flags`, then act.
  int64_t step(Agent& agent, int slot, uint8_t flags, float value = 0.f) {
    const torch::Tensor obs = torch::full({1, 4}, value);
    agent.observe(slot, static_cast<const uint8_t*>(obs.data_ptr()), (flags & envs::kFirst) ? 0.f : 1.f, flags, 0,
                  1.f);
    return agent.act({slot}, obs, 0).item<int64_t>();
  }

  const envs::EnvSpec spec_ = envs::make_env("CartPole-v1")->spec();
};

// Env 1 (evaluation) plays one-step episodes first: unrolls of one valid step each, which would
// come out of the FIFO first if they were trained on. Env 0 (training) then plays one long
// episode: unrolls of two valid steps. Every trained batch must be env 0's.
TEST_F(VtraceAgentEval, EvaluationStepsNeverReachATrainedBatchAndTheirEpisodesCarryTheirSlot) {
  std::unique_ptr<Agent> agent = make_agent(eval_config(), spec_, torch::kCPU);
  for (int episode = 0; episode < 4; ++episode) {
    step(*agent, 1, envs::kFirst);
    step(*agent, 1, envs::kTerminated);
  }
  step(*agent, 0, envs::kFirst);
  for (int t = 1; t <= 6; ++t) step(*agent, 0, 0);  // x_0..x_6: unrolls end at x_2, x_4, x_6
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(agent->await_batch());
    const TrainReport report = agent->train(eval_config(), 1e-3, i);
    EXPECT_TRUE(report.applied);
    EXPECT_EQ(report.frames, 2) << "batch " << i << " holds an evaluation env's unroll";
  }
  EXPECT_EQ(agent->stats().queue_size, 0);  // nothing else was queued

  std::vector<EpisodeResult> finished;
  agent->take_finished_episodes(finished);
  ASSERT_EQ(finished.size(), 4u);
  for (const EpisodeResult& e : finished) {
    EXPECT_EQ(e.slot, 1);
    EXPECT_EQ(e.length, 1);
    EXPECT_DOUBLE_EQ(e.episode_return, 1.0);
  }
  agent->close();
}

TEST_F(VtraceAgentEval, EvalGreedyActsOnTheModeOnlyInEvaluationEnvs) {
  ExperimentConfig config = eval_config();
  config.section<engine::VTraceConfig>().eval_greedy = true;
  std::unique_ptr<Agent> agent = make_agent(config, spec_, torch::kCPU);
  const float x = 0.3f;
  const int64_t mode =
      agent->evaluation_policy(1, /*greedy=*/true, 0)->act(torch::full({1, 4}, x), {0.f}, true).item<int64_t>();
  std::vector<int> eval_counts(2, 0);
  std::vector<int> train_counts(2, 0);
  step(*agent, 0, envs::kFirst, x);
  step(*agent, 1, envs::kFirst, x);
  for (int i = 0; i < 12; ++i) {  // 6 unrolls of each env: the FIFO (16) never blocks, even for both
    train_counts[static_cast<size_t>(step(*agent, 0, 0, x))] += 1;
    eval_counts[static_cast<size_t>(step(*agent, 1, 0, x))] += 1;
  }
  EXPECT_EQ(eval_counts[static_cast<size_t>(mode)], eval_counts[0] + eval_counts[1]);
  // A fresh net's two logits are close: training envs sample both actions.
  EXPECT_GT(train_counts[0], 0);
  EXPECT_GT(train_counts[1], 0);
  agent->close();
}

// A recurrent policy (model ending in an lstm) acting on random observations in two envs whose
// episodes end inside unrolls: with a learning rate of 0 the weights never change, so if every
// unroll trains from the state its step 0 acted with (and resets where episodes start), the
// learner's log pi(a_t|x_t) equals the behaviour's log mu and every ratio rho is 1. A state
// that leaked across an episode or restarted from zero would move the ratios far from 1.
TEST(VtraceAgentRecurrent, TrainingUnrollsFromTheStatesInferenceActedWith) {
  torch::manual_seed(9);
  ExperimentConfig config = small_config();
  config.model.kind = "layers";
  config.model.layers = {{"linear", 16}, {"tanh"}, {"lstm", 8}};
  config.learner.unroll = 5;
  config.learner.batch = 2;
  config.learner.queue_capacity = 32;
  const envs::EnvSpec spec = envs::make_env("CartPole-v1")->spec();
  std::unique_ptr<Agent> agent = make_agent(config, spec, torch::kCPU);
  play_episodes(*agent, 40, {7, 4});  // episodes end inside unrolls of 5 steps, at different steps
  int batches = 0;
  while (agent->await_batch_for(std::chrono::milliseconds(200))) {
    const TrainReport report = agent->train(config, /*lr=*/0.0, 0);
    ASSERT_TRUE(report.applied);
    const auto rho = std::find_if(report.metrics.begin(), report.metrics.end(),
                                  [](const Metric& m) { return m.name == "mean_rho"; });
    ASSERT_NE(rho, report.metrics.end());
    EXPECT_NEAR(rho->value, 1.0, 1e-5) << "batch " << batches;
    ++batches;
  }
  EXPECT_EQ(batches, 7);  // per env, 40 observations make 7 unrolls of 5 steps (each shares one)
  agent->close();
}

}  // namespace
}  // namespace moonseed::engine
