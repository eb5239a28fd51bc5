// APPO: the actor-critic agent (engine/actor_critic/actor_critic_agent.h: acting, unrolls, the
// FIFO, evaluation envs, recurrent state) training each batch with PPO's clipped surrogate on
// V-trace's advantages (appo_loss.h): targets once per batch, then appo.epochs passes over it in
// appo.minibatches minibatches of whole unrolls, shuffled each pass, one optimizer step each.
#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "engine/actor_critic/actor_critic_agent.h"
#include "engine/actor_critic/unroll_outputs.h"
#include "engine/appo/appo_loss.h"
#include "engine/appo/config/appo_config.h"
#include "engine/learner/agent_registry.h"

namespace moonseed::engine {
namespace {

class AppoAgent : public ActorCriticAgent {
 public:
  AppoAgent(const ExperimentConfig& config, const envs::EnvSpec& spec, torch::Device device)
      : ActorCriticAgent(config, spec, device, config.section<AppoConfig>().eval_greedy) {}

 protected:
  TrainReport update(const UnrollBatch& batch, const ExperimentConfig& config, int64_t version) override {
    const AppoConfig& appo = config.section<AppoConfig>();
    const AppoTargets targets = appo_targets(model(), batch, appo);
    TrainReport report;
    double policy = 0, value = 0, entropy = 0, kl = 0, clipped = 0, total = 0, worst_norm = 0;
    int64_t steps = 0;
    const std::vector<torch::Tensor> order =
        minibatch_order(batch.B(), appo.epochs, appo.minibatches, batch.valid.device());
    // Every batch holds learner.batch unrolls and appo.minibatches <= learner.batch (a config
    // rule), so this is optimizer_steps_per_batch() steps: a group's learners all-reduce in step.
    for (const torch::Tensor& index : order) {
      const UnrollBatch minibatch = select_unrolls(batch, index);
      AppoLossTerms loss = appo_loss(model(), minibatch, targets.select(index), appo);
      zero_grad();
      loss.total.backward();
      const double norm = apply_gradients(config);
      if (!std::isfinite(norm)) {  // that step was skipped; the others stand
        worst_norm = norm;
        continue;
      }
      if (std::isfinite(worst_norm)) worst_norm = std::max(worst_norm, norm);
      report.applied = true;
      ++steps;
      total += loss.total.item<double>();
      policy += loss.policy;
      value += loss.value;
      entropy += loss.entropy;
      kl += loss.kl;
      clipped += loss.clip_fraction;
    }
    report.grad_norm = worst_norm;
    if (!report.applied) return report;
    const double n = static_cast<double>(steps);
    report.loss_total = total / n;
    report.metrics = {{"loss_policy", policy / n},      {"loss_value", value / n},
                      {"loss_entropy", entropy / n},    {"loss_kl", kl / n},
                      {"clip_fraction", clipped / n},   {"mean_rho", targets.mean_rho},
                      {"policy_lag", policy_lag(batch, version)},
                      {"entropy_cost", appo.entropy_cost}};
    return report;
  }

  WarmStartLoss warm_start_loss(const UnrollBatch& batch, const ExperimentConfig& config) override {
    const AppoConfig& appo = config.section<AppoConfig>();
    const AppoLossTerms loss = appo_loss(model(), batch, appo_targets(model(), batch, appo), appo,
                                         config.warm_start.bc_cost);
    return {loss.total, loss.bc};
  }

  int64_t optimizer_steps_per_batch(const ExperimentConfig& config) const override {
    const AppoConfig& appo = config.section<AppoConfig>();
    return static_cast<int64_t>(appo.epochs) * appo.minibatches;
  }
};

std::unique_ptr<Agent> make(const ExperimentConfig& config, const envs::EnvSpec& spec, torch::Device device) {
  return std::make_unique<AppoAgent>(config, spec, device);
}

EvalActing eval_acting(const ExperimentConfig& config) {
  const bool greedy = config.section<AppoConfig>().eval_greedy;
  return EvalActing{greedy, greedy ? "greedy" : "sampled"};
}

const AgentRegistration kRegistration(
    "appo", {&make, &actor_critic_check_model, &actor_critic_export, kActorCriticExportSignature, &eval_acting,
             {{"loss_policy", "loss",
               "the clipped surrogate term, averaged over the last batch's `epochs x minibatches` updates "
               "([appo.md](appo.md#metrics))"},
              {"loss_value", "loss", "the value term, averaged over the last batch's updates"},
              {"loss_entropy", "loss", "the entropy term, averaged over the last batch's updates"},
              {"loss_kl", "loss", "the KL penalty term (0 with `appo.kl_coef = 0`), averaged over the last batch's updates"},
              {"clip_fraction", "fraction (0 to 1)",
               "share of the last batch's valid steps whose ratio pi/mu left `[1 - clip, 1 + clip]`, averaged over its "
               "updates"},
              {"mean_rho", "ratio", "mean importance ratio pi/mu of the last batch at its first pass"},
              {"policy_lag", "batches", "how many batches old the acting policy was, averaged over the last batch"},
              {"entropy_cost", "coefficient", "the entropy coefficient the last batch used (it may follow a schedule)"}}});

}  // namespace
}  // namespace moonseed::engine
