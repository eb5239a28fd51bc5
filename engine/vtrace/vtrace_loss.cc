#include "engine/vtrace/vtrace_loss.h"

#include <algorithm>

#include "engine/actor_critic/unroll_outputs.h"
#include "engine/vtrace/targets/batch_targets.h"

namespace moonseed::engine {

LossTerms vtrace_loss(models::PolicyNet& model, const UnrollBatch& batch,
                      const VTraceConfig& config, double bc_cost) {
  const UnrollOutputs out = unroll_outputs(model, batch, "vtrace_loss");
  const int64_t T = batch.T();
  const torch::Tensor values = out.values.narrow(0, 0, T);
  const torch::Tensor& valid = out.valid;
  torch::Tensor rhos;
  const VTraceOutput targets = batch_vtrace_targets(out, batch, config.gamma, vtrace_params(config), &rhos);

  // Sums are divided by the number of valid steps in the batch, not by B*T, so the
  // learning rate means the same thing whatever the batch and unroll sizes are, and
  // batches with many final-observation steps are not down-weighted.
  const int64_t valid_steps = (valid > 0).sum().item<int64_t>();
  const double denom = static_cast<double>(std::max<int64_t>(valid_steps, 1));

  const torch::Tensor policy_loss = -(out.logpi * targets.pg_advantages * valid).sum() / denom;
  const torch::Tensor baseline_loss =
      config.baseline_cost * 0.5 * ((targets.vs - values).square() * valid).sum() / denom;
  const torch::Tensor mean_entropy = (out.entropy * valid).sum() / denom;
  // IMPALA's sign: the loss gets minus the entropy bonus, so minimising it raises H.
  const torch::Tensor entropy_loss = -config.entropy_cost * mean_entropy;

  LossTerms terms;
  terms.total = policy_loss + baseline_loss + entropy_loss;
  if (bc_cost > 0) {
    const torch::Tensor bc_loss = -bc_cost * (out.logpi * valid).sum() / denom;
    terms.total = terms.total + bc_loss;
    terms.bc = bc_loss.item<double>();
  }
  terms.policy = policy_loss.item<double>();
  terms.baseline = baseline_loss.item<double>();
  terms.entropy = entropy_loss.item<double>();
  terms.mean_entropy = mean_entropy.item<double>();
  terms.mean_rho = ((rhos * valid).sum() / denom).item<double>();
  terms.mean_value = ((values.detach() * valid).sum() / denom).item<double>();
  terms.valid_steps = valid_steps;
  return terms;
}

}  // namespace moonseed::engine
