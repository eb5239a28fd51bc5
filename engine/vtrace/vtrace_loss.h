// The IMPALA actor-critic loss of one training batch, with V-trace targets.
//
// One forward pass of the model over all (T+1)*B observations of the batch
// gives log pi(a_t|x_t) and V(x_t); then, for t < T:
//   log_rho_t  = log pi(a_t|x_t) - behaviour_logp_t
//   discount_t = gamma * (1 - terminated_t) * valid_t,  mask_t = valid_t
//   (vs, A) = vtrace(...), bootstrapping from V(x_T)
//   policy   = -sum(log pi(a_t|x_t) * A_t * valid_t)
//   baseline = baseline_cost * 0.5 * sum((vs_t - V_t)^2 * valid_t)
//   entropy  = -entropy_cost * sum(H(pi(.|x_t)) * valid_t)
// each divided by the number of valid steps, total = policy + baseline + entropy.
// Invalid steps (final observations of "next step" autoreset) carry no loss and
// their reward, action and behaviour log-prob have no effect.
//
// Throws std::invalid_argument when the batch's tensors disagree in shape.
// Not thread-safe with respect to the model: call under the weights lock, or
// with a model no other thread writes.
#pragma once

#include <cstdint>

#include <torch/torch.h>

#include "engine/config/experiment_config.h"
#include "engine/vtrace/config/vtrace_config.h"
#include "engine/learner/unroll_batch.h"
#include "engine/vtrace/targets/vtrace.h"
#include "models/policy_net.h"

namespace moonseed::engine {

struct LossTerms {
  torch::Tensor total;     // scalar, with gradient to the model's parameters
  double policy = 0;       // the three weighted terms of total, as plain values
  double baseline = 0;
  double entropy = 0;
  double mean_entropy = 0; // H(pi) averaged over valid steps (no coefficient)
  double mean_rho = 0;     // exp(log_rho) averaged over valid steps (1 when on-policy)
  double mean_value = 0;   // V(x_t) averaged over valid steps t < T
  int64_t valid_steps = 0;
  double bc = 0;           // bc_cost * -mean log pi(a_t|x_t) (warm start), 0 otherwise
};

// `bc_cost` > 0 adds behaviour cloning to total: bc_cost * -sum(log pi(a_t|x_t)
// * valid_t) / valid steps (a warm start from logged unrolls).
LossTerms vtrace_loss(models::PolicyNet& model, const UnrollBatch& batch,
                      const VTraceConfig& config, double bc_cost = 0);


}  // namespace moonseed::engine
