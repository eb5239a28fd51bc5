// IMPALA's V-trace: the actor-critic agent (engine/actor_critic/actor_critic_agent.h: acting,
// unrolls, the FIFO, evaluation envs, recurrent state) training each batch once with
// vtrace_loss and one optimizer step.
#include <cmath>
#include <memory>
#include <string>

#include "engine/actor_critic/actor_critic_agent.h"
#include "engine/learner/agent_registry.h"
#include "engine/vtrace/config/vtrace_config.h"
#include "engine/vtrace/vtrace_loss.h"

namespace moonseed::engine {
namespace {

class VtraceAgent : public ActorCriticAgent {
 public:
  VtraceAgent(const ExperimentConfig& config, const envs::EnvSpec& spec, torch::Device device)
      : ActorCriticAgent(config, spec, device, config.section<VTraceConfig>().eval_greedy) {}

 protected:
  TrainReport update(const UnrollBatch& batch, const ExperimentConfig& config, int64_t version) override {
    TrainReport report;
    const VTraceConfig& vtrace = config.section<VTraceConfig>();
    LossTerms loss = vtrace_loss(model(), batch, vtrace);
    zero_grad();
    loss.total.backward();
    report.grad_norm = apply_gradients(config);
    if (!std::isfinite(report.grad_norm)) return report;
    report.applied = true;
    report.loss_total = loss.total.item<double>();
    report.metrics = {{"loss_policy", loss.policy},   {"loss_baseline", loss.baseline},
                      {"loss_entropy", loss.entropy}, {"mean_rho", loss.mean_rho},
                      {"policy_lag", policy_lag(batch, version)},
                      {"entropy_cost", vtrace.entropy_cost}};
    return report;
  }

  WarmStartLoss warm_start_loss(const UnrollBatch& batch, const ExperimentConfig& config) override {
    LossTerms loss = vtrace_loss(model(), batch, config.section<VTraceConfig>(), config.warm_start.bc_cost);
    return {loss.total, loss.bc};
  }
};

std::unique_ptr<Agent> make(const ExperimentConfig& config, const envs::EnvSpec& spec, torch::Device device) {
  return std::make_unique<VtraceAgent>(config, spec, device);
}

// vtrace.eval_greedy: the policy's mode, else sampled as in training.
EvalActing eval_acting(const ExperimentConfig& config) {
  const bool greedy = config.section<VTraceConfig>().eval_greedy;
  return EvalActing{greedy, greedy ? "greedy" : "sampled"};
}

const AgentRegistration kRegistration(
    "vtrace", {&make, &actor_critic_check_model, &actor_critic_export, kActorCriticExportSignature, &eval_acting,
               {{"loss_policy", "loss", "the policy-gradient term of the last step's loss"},
                {"loss_baseline", "loss", "the baseline (value) term of the last step's loss"},
                {"loss_entropy", "loss", "the entropy term of the last step's loss"},
                {"mean_rho", "ratio", "mean importance ratio pi/mu of the last batch"},
                {"policy_lag", "optimizer steps",
                 "how many optimizer steps old the acting policy was, averaged over the last batch"},
                {"entropy_cost", "coefficient", "the entropy coefficient the last step used (it may follow a schedule)"}}});

}  // namespace
}  // namespace moonseed::engine
