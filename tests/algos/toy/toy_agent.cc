// The toy algorithm's agent: the actor-critic agent (acting, unrolls, FIFO, checkpoints) with an
// update that regresses V(x_t) on each unroll's discounted returns, bootstrapped from V(x_T).
#include <cmath>
#include <memory>
#include <string>

#include "engine/actor_critic/actor_critic_agent.h"
#include "engine/actor_critic/unroll_outputs.h"
#include "engine/learner/agent_registry.h"
#include "tests/algos/toy/toy_config.h"

namespace moonseed::toy {
namespace {

using engine::ExperimentConfig;
using engine::TrainReport;
using engine::UnrollBatch;

class ToyAgent : public engine::ActorCriticAgent {
 public:
  ToyAgent(const ExperimentConfig& config, const envs::EnvSpec& spec, torch::Device device)
      : ActorCriticAgent(config, spec, device, /*eval_greedy=*/false) {}

 protected:
  TrainReport update(const UnrollBatch& batch, const ExperimentConfig& config, int64_t version) override {
    const torch::Tensor loss = value_loss(batch, config);
    zero_grad();
    loss.backward();
    TrainReport report;
    report.grad_norm = apply_gradients(config);
    if (!std::isfinite(report.grad_norm)) return report;
    report.applied = true;
    report.loss_total = loss.item<double>();
    report.metrics = {{"toy_value_loss", report.loss_total}, {"policy_lag", policy_lag(batch, version)}};
    return report;
  }

  WarmStartLoss warm_start_loss(const UnrollBatch& batch, const ExperimentConfig& config) override {
    return {value_loss(batch, config), 0};
  }

 private:
  torch::Tensor value_loss(const UnrollBatch& batch, const ExperimentConfig& config) {
    const ToyConfig& toy = config.section<ToyConfig>();
    const engine::UnrollOutputs out = engine::unroll_outputs(model(), batch, "toy");
    const int64_t T = batch.T();
    torch::Tensor returns = out.values[T].detach();
    std::vector<torch::Tensor> targets(static_cast<size_t>(T));
    for (int64_t t = T - 1; t >= 0; --t) {
      returns = batch.rewards[t] + toy.gamma * (1 - batch.terminated[t]) * out.valid[t] * returns;
      targets[static_cast<size_t>(t)] = returns;
    }
    const torch::Tensor error = (torch::stack(targets) - out.values.narrow(0, 0, T)).square() * out.valid;
    return toy.scale * error.sum() / out.valid.sum().clamp_min(1);
  }
};

std::unique_ptr<engine::Agent> make(const ExperimentConfig& config, const envs::EnvSpec& spec, torch::Device device) {
  return std::make_unique<ToyAgent>(config, spec, device);
}

engine::EvalActing eval_acting(const ExperimentConfig&) { return {false, "sampled by the toy"}; }

const engine::AgentRegistration kRegistration(
    "toy", {&make, &engine::actor_critic_check_model, &engine::actor_critic_export,
            engine::kActorCriticExportSignature, &eval_acting,
            {{"toy_value_loss", "loss", "the value regression of the last step"},
             {"policy_lag", "optimizer steps", "how many steps old the acting policy was"}}});

}  // namespace
}  // namespace moonseed::toy
