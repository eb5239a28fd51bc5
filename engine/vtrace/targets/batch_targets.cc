#include "engine/vtrace/targets/batch_targets.h"

namespace moonseed::engine {

VTraceOutput batch_vtrace_targets(const UnrollOutputs& out, const UnrollBatch& batch, double gamma,
                                  const VTraceParams& params, torch::Tensor* rhos) {
  torch::NoGradGuard no_grad;
  const int64_t T = batch.T();
  const torch::Tensor& valid = out.valid;
  const torch::Tensor is_valid = valid > 0;
  // Invalid steps are zeroed with where() rather than by the mask product alone,
  // so that anything stored there (even inf or NaN) cannot reach the loss.
  const torch::Tensor zeros = torch::zeros_like(valid);
  VTraceInput in;
  in.log_rhos = torch::where(
      is_valid, out.logpi.detach() - batch.behaviour_logp.narrow(0, 0, T).to(torch::kFloat32), zeros);
  in.discounts = gamma * (1.0 - batch.terminated.narrow(0, 0, T)) * valid;
  in.rewards = torch::where(is_valid, batch.rewards.narrow(0, 0, T), zeros);
  in.values = out.values.narrow(0, 0, T).detach();
  in.bootstrap_value = out.values[T].detach();
  in.mask = valid;
  if (rhos != nullptr) *rhos = in.log_rhos.exp();
  return vtrace(in, params);
}

}  // namespace moonseed::engine
