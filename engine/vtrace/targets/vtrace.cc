#include "engine/vtrace/targets/vtrace.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>
#include <string>

namespace moonseed::engine {
namespace {

std::string shape_of(const torch::Tensor& t) {
  if (!t.defined()) return "undefined";
  std::ostringstream os;
  os << t.sizes();
  return os.str();
}

void require_shape(const char* name, const torch::Tensor& t, torch::IntArrayRef want) {
  if (!t.defined() || t.sizes() != want || !t.is_floating_point()) {
    std::ostringstream os;
    os << "vtrace: " << name << " must be a floating tensor of shape " << want << ", got "
       << shape_of(t);
    if (t.defined() && !t.is_floating_point()) os << " of dtype " << t.dtype();
    throw std::invalid_argument(os.str());
  }
}

void require_length(const char* name, size_t got, size_t want) {
  if (got != want) {
    throw std::invalid_argument(std::string("vtrace_targets: ") + name + " has length " +
                                std::to_string(got) + ", expected " + std::to_string(want) +
                                " (the length of log_rhos)");
  }
}

}  // namespace

VTraceOutput vtrace(const VTraceInput& in, const VTraceParams& params) {
  if (!in.log_rhos.defined() || in.log_rhos.dim() != 2) {
    throw std::invalid_argument("vtrace: log_rhos must be a [T, B] tensor, got " +
                                shape_of(in.log_rhos));
  }
  const int64_t T = in.log_rhos.size(0);
  const int64_t B = in.log_rhos.size(1);
  require_shape("log_rhos", in.log_rhos, {T, B});
  require_shape("discounts", in.discounts, {T, B});
  require_shape("rewards", in.rewards, {T, B});
  require_shape("values", in.values, {T, B});
  require_shape("bootstrap_value", in.bootstrap_value, {B});
  if (in.mask.defined()) require_shape("mask", in.mask, {T, B});

  // Targets are constants of the loss: nothing here may enter the autograd graph.
  torch::NoGradGuard no_grad;
  const torch::Tensor values = in.values.detach();
  const torch::Tensor bootstrap = in.bootstrap_value.detach().unsqueeze(0);
  const torch::Tensor mask = in.mask.defined() ? in.mask : torch::ones_like(values);

  const torch::Tensor rhos = in.log_rhos.exp();
  const torch::Tensor clipped_rhos = rhos.clamp_max(params.rho_clip);
  const torch::Tensor cs = rhos.clamp_max(params.c_clip) * params.lambda;
  const torch::Tensor next_values = torch::cat({values.slice(0, 1), bootstrap}, 0);
  const torch::Tensor deltas =
      mask * clipped_rhos * (in.rewards + in.discounts * next_values - values);

  // acc_t = delta_t + gamma_t c_t acc_{t+1}, acc_T = 0. T is small (unroll length),
  // B is wide, so a loop over time on [B] rows is cheap.
  const torch::Tensor decay = in.discounts * cs;
  torch::Tensor vs_minus_values = torch::empty_like(values);
  torch::Tensor acc = torch::zeros({B}, values.options());
  for (int64_t t = T - 1; t >= 0; --t) {
    acc = deltas[t] + decay[t] * acc;
    vs_minus_values[t].copy_(acc);
  }

  VTraceOutput out;
  out.vs = values + vs_minus_values;
  const torch::Tensor next_vs = torch::cat({out.vs.slice(0, 1), bootstrap}, 0);
  // Masked steps get a zero advantage: their action did nothing (docs/architecture.md).
  out.pg_advantages = mask * rhos.clamp_max(params.pg_rho_clip) *
                      (in.rewards + in.discounts * next_vs - values);
  return out;
}

VTraceTargets vtrace_targets(const std::vector<double>& log_rhos,
                             const std::vector<double>& discounts,
                             const std::vector<double>& rewards,
                             const std::vector<double>& values, double bootstrap_value,
                             const std::vector<double>& mask, const VTraceParams& params) {
  const size_t T = log_rhos.size();
  require_length("discounts", discounts.size(), T);
  require_length("rewards", rewards.size(), T);
  require_length("values", values.size(), T);
  if (!mask.empty()) require_length("mask", mask.size(), T);

  auto value_after = [&](size_t t) { return t + 1 < T ? values[t + 1] : bootstrap_value; };
  auto mask_at = [&](size_t t) { return mask.empty() ? 1.0 : mask[t]; };

  VTraceTargets out;
  out.vs.assign(T, 0.0);
  out.pg_advantages.assign(T, 0.0);
  double acc = 0.0;
  for (size_t i = T; i-- > 0;) {
    const double rho = std::exp(log_rhos[i]);
    const double rho_bar = std::min(params.rho_clip, rho);
    const double c = params.lambda * std::min(params.c_clip, rho);
    const double delta =
        mask_at(i) * rho_bar * (rewards[i] + discounts[i] * value_after(i) - values[i]);
    acc = delta + discounts[i] * c * acc;
    out.vs[i] = values[i] + acc;
  }
  for (size_t i = 0; i < T; ++i) {
    const double rho = std::exp(log_rhos[i]);
    const double next_vs = i + 1 < T ? out.vs[i + 1] : bootstrap_value;
    out.pg_advantages[i] = mask_at(i) * std::min(params.pg_rho_clip, rho) *
                           (rewards[i] + discounts[i] * next_vs - values[i]);
  }
  return out;
}

}  // namespace moonseed::engine
