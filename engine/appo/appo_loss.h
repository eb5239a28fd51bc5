// APPO's loss (docs/appo.md): PPO's clipped surrogate on V-trace-corrected advantages.
//
// Once per batch, with the weights of its first pass and no gradient (appo_targets):
//   (vs, A) = V-trace over the batch (engine/vtrace/vtrace_loss.h batch_vtrace_targets),
//   V_old   = V(x_t).
// Then per minibatch of whole unrolls (appo_loss), for valid steps t < T:
//   r_t      = pi(a_t|x_t) / mu(a_t|x_t)      mu: the behaviour policy's log-prob the actor logged
//   policy   = -mean(min(r_t A_t, clip(r_t, 1 - clip, 1 + clip) A_t))
//   value    = value_cost * 0.5 * mean((vs_t - V_t)^2), or with value_clip > 0
//              value_cost * 0.5 * mean(max((vs_t - V_t)^2, (vs_t - V_old_t - clamp(V_t - V_old_t, +-value_clip))^2))
//   entropy  = -entropy_cost * mean(H(pi(.|x_t)))
//   kl       = kl_coef * mean((r_t - 1) - log r_t)    (an estimate of KL(mu || pi) from the actions taken)
//   total    = policy + value + entropy + kl
// normalize_advantages scales A over the minibatch's valid steps to mean 0, std 1 first.
//
// Throws std::invalid_argument when the batch's tensors disagree in shape. Not thread-safe with
// respect to the model: call under the weights lock, or with a model no other thread writes.
#pragma once

#include <cstdint>
#include <vector>

#include <torch/torch.h>

#include "engine/appo/config/appo_config.h"
#include "engine/learner/unroll_batch.h"
#include "models/policy_net.h"

namespace moonseed::engine {

// What a batch's minibatches share, computed once: [T, B] each, no gradient.
struct AppoTargets {
  torch::Tensor vs;          // V-trace value targets
  torch::Tensor advantages;  // V-trace's policy-gradient advantages, rho clipped at pg_rho_clip
  torch::Tensor old_values;  // V(x_t) at the first pass
  double mean_rho = 0;       // pi/mu averaged over valid steps, at the first pass

  // The columns (unrolls) `index` of each, as select_unrolls picks a minibatch.
  AppoTargets select(const torch::Tensor& index) const;
};

AppoTargets appo_targets(models::PolicyNet& model, const UnrollBatch& batch, const AppoConfig& config);

struct AppoLossTerms {
  torch::Tensor total;        // scalar, with gradient to the model's parameters
  double policy = 0;          // the weighted terms of total, as plain values
  double value = 0;
  double entropy = 0;
  double kl = 0;
  double clip_fraction = 0;   // share of valid steps whose ratio lies outside [1 - clip, 1 + clip]
  double bc = 0;              // bc_cost * -mean log pi(a_t|x_t) (warm start), 0 otherwise
  int64_t valid_steps = 0;
};

// The minibatches of one batch of B unrolls: `epochs` passes, each a fresh shuffle of 0..B-1
// cut into min(minibatches, B) parts of whole unrolls (sizes differing by at most one), as
// [n] int64 index tensors on `device`, in training order. Draws from LibTorch's generator.
std::vector<torch::Tensor> minibatch_order(int64_t B, int epochs, int minibatches, torch::Device device);

// `bc_cost` > 0 adds behaviour cloning to total, as vtrace_loss does.
AppoLossTerms appo_loss(models::PolicyNet& model, const UnrollBatch& minibatch, const AppoTargets& targets,
                        const AppoConfig& config, double bc_cost = 0);

}  // namespace moonseed::engine
