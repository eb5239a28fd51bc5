#include "engine/appo/appo_loss.h"

#include <algorithm>

#include "engine/actor_critic/unroll_outputs.h"
#include "engine/vtrace/targets/batch_targets.h"

namespace moonseed::engine {

AppoTargets AppoTargets::select(const torch::Tensor& index) const {
  AppoTargets part;
  part.vs = vs.index_select(1, index);
  part.advantages = advantages.index_select(1, index);
  part.old_values = old_values.index_select(1, index);
  part.mean_rho = mean_rho;
  return part;
}

AppoTargets appo_targets(models::PolicyNet& model, const UnrollBatch& batch, const AppoConfig& config) {
  torch::NoGradGuard no_grad;
  const UnrollOutputs out = unroll_outputs(model, batch, "appo_loss");
  torch::Tensor rhos;
  const VTraceOutput vtrace = batch_vtrace_targets(out, batch, config.gamma, vtrace_params(config), &rhos);
  AppoTargets targets;
  targets.vs = vtrace.vs;
  targets.advantages = vtrace.pg_advantages;
  targets.old_values = out.values.narrow(0, 0, batch.T());
  const double valid = std::max(out.valid.sum().item<double>(), 1.0);
  targets.mean_rho = (rhos * out.valid).sum().item<double>() / valid;
  return targets;
}

std::vector<torch::Tensor> minibatch_order(int64_t B, int epochs, int minibatches, torch::Device device) {
  const int64_t parts = std::min<int64_t>(minibatches, B);
  std::vector<torch::Tensor> order;
  for (int epoch = 0; epoch < epochs; ++epoch) {
    const torch::Tensor shuffled = torch::randperm(B, torch::TensorOptions(torch::kInt64).device(device));
    for (const torch::Tensor& part : torch::tensor_split(shuffled, parts)) order.push_back(part);
  }
  return order;
}

AppoLossTerms appo_loss(models::PolicyNet& model, const UnrollBatch& minibatch, const AppoTargets& targets,
                        const AppoConfig& config, double bc_cost) {
  const UnrollOutputs out = unroll_outputs(model, minibatch, "appo_loss");
  const int64_t T = minibatch.T();
  const torch::Tensor& valid = out.valid;
  const torch::Tensor is_valid = valid > 0;
  const int64_t valid_steps = is_valid.sum().item<int64_t>();
  const double denom = static_cast<double>(std::max<int64_t>(valid_steps, 1));
  const auto mean = [&](const torch::Tensor& x) { return (x * valid).sum() / denom; };

  // log r_t, zero on invalid steps (whatever their stored log-prob holds).
  const torch::Tensor log_ratio =
      torch::where(is_valid, out.logpi - minibatch.behaviour_logp.narrow(0, 0, T).to(torch::kFloat32),
                   torch::zeros_like(out.logpi));
  const torch::Tensor ratio = log_ratio.exp();
  torch::Tensor advantages = targets.advantages;
  if (config.normalize_advantages && valid_steps > 1) {
    const torch::Tensor m = mean(advantages);
    const torch::Tensor var = ((advantages - m).square() * valid).sum() / (denom - 1);
    advantages = (advantages - m) / (var.sqrt() + 1e-8);
  }
  const torch::Tensor surrogate =
      torch::min(ratio * advantages, ratio.clamp(1 - config.clip, 1 + config.clip) * advantages);
  const torch::Tensor policy_loss = -mean(surrogate);

  const torch::Tensor values = out.values.narrow(0, 0, T);
  torch::Tensor value_error = (targets.vs - values).square();
  if (config.value_clip > 0) {
    const torch::Tensor clipped =
        targets.old_values + (values - targets.old_values).clamp(-config.value_clip, config.value_clip);
    value_error = torch::max(value_error, (targets.vs - clipped).square());
  }
  const torch::Tensor value_loss = config.value_cost * 0.5 * mean(value_error);
  const torch::Tensor entropy_loss = -config.entropy_cost * mean(out.entropy);

  AppoLossTerms terms;
  terms.total = policy_loss + value_loss + entropy_loss;
  if (config.kl_coef > 0) {
    const torch::Tensor kl_loss = config.kl_coef * mean((ratio - 1) - log_ratio);
    terms.total = terms.total + kl_loss;
    terms.kl = kl_loss.item<double>();
  }
  if (bc_cost > 0) {
    const torch::Tensor bc_loss = -bc_cost * mean(out.logpi);
    terms.total = terms.total + bc_loss;
    terms.bc = bc_loss.item<double>();
  }
  terms.policy = policy_loss.item<double>();
  terms.value = value_loss.item<double>();
  terms.entropy = entropy_loss.item<double>();
  {
    torch::NoGradGuard no_grad;
    terms.clip_fraction = mean(((ratio - 1).abs() > config.clip).to(torch::kFloat32)).item<double>();
  }
  terms.valid_steps = valid_steps;
  return terms;
}

}  // namespace moonseed::engine
