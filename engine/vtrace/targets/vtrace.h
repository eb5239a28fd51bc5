// V-trace targets (IMPALA, Espeholt et al. 2018), exactly as the paper states them,
// with a validity mask for the final-observation steps of "next step" autoreset
// (docs/architecture.md): delta_t is multiplied by mask_t.
//
// Pure functions, thread-safe. Results carry no gradient.
#pragma once

#include <vector>

#include <torch/torch.h>

namespace moonseed::engine {

struct VTraceParams {
  double lambda = 1.0;
  double rho_clip = 1.0;     // rho_bar in delta_t
  double pg_rho_clip = 1.0;  // rho clip of the policy-gradient advantage
  double c_clip = 1.0;       // c_t = lambda * min(c_clip, rho_t)
};

// All time-major [T, B] float tensors, bootstrap_value [B].
// discounts already include termination and masking: gamma * (1 - terminated_t) * mask_t.
// mask may be undefined (treated as all ones).
struct VTraceInput {
  torch::Tensor log_rhos;  // log pi(a_t|x_t) - log mu(a_t|x_t)
  torch::Tensor discounts;
  torch::Tensor rewards;
  torch::Tensor values;    // V(x_t), t = 0..T-1
  torch::Tensor bootstrap_value;  // V(x_T)
  torch::Tensor mask;
};

struct VTraceOutput {
  torch::Tensor vs;             // [T, B] value targets v_t
  torch::Tensor pg_advantages;  // [T, B] min(pg_rho_clip, rho_t) (r_t + gamma_t v_{t+1} - V_t)
};

// Throws std::invalid_argument naming the tensor whose shape is wrong.
VTraceOutput vtrace(const VTraceInput& in, const VTraceParams& params);

// The same computation on plain vectors for one trajectory (B = 1), for the Lua
// API and tests. All vectors have length T except bootstrap_value (a scalar);
// an empty mask means all ones.
struct VTraceTargets {
  std::vector<double> vs;
  std::vector<double> pg_advantages;
};
VTraceTargets vtrace_targets(const std::vector<double>& log_rhos,
                             const std::vector<double>& discounts,
                             const std::vector<double>& rewards,
                             const std::vector<double>& values, double bootstrap_value,
                             const std::vector<double>& mask, const VTraceParams& params);

}  // namespace moonseed::engine
