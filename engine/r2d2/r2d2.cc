#include "engine/r2d2/r2d2.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>
#include <string>

#include "base/check.h"

namespace moonseed::engine {
namespace {

// Every [L, B] input of one call must be a floating tensor of the first one's shape and dtype.
class MatrixCheck {
 public:
  MatrixCheck(const char* function, const char* first_name, const torch::Tensor& first)
      : function_(function) {
    if (!first.defined() || first.dim() != 2 || !first.is_floating_point()) {
      std::ostringstream os;
      os << function_ << ": " << first_name << " must be a floating [L, B] tensor, got ";
      if (first.defined()) {
        os << first.sizes() << " of dtype " << first.dtype();
      } else {
        os << "an undefined tensor";
      }
      throw std::invalid_argument(os.str());
    }
    L_ = first.size(0);
    B_ = first.size(1);
    dtype_ = first.scalar_type();
  }

  void operator()(const char* name, const torch::Tensor& t) const {
    if (t.defined() && t.sizes() == torch::IntArrayRef{L_, B_} && t.scalar_type() == dtype_) return;
    std::ostringstream os;
    os << function_ << ": " << name << " must be a " << dtype_ << " tensor of shape [" << L_ << ", " << B_
       << "], got ";
    if (t.defined()) {
      os << t.sizes() << " of dtype " << t.dtype();
    } else {
      os << "an undefined tensor";
    }
    throw std::invalid_argument(os.str());
  }

  int64_t L() const { return L_; }
  int64_t B() const { return B_; }

 private:
  const char* function_;
  int64_t L_ = 0;
  int64_t B_ = 0;
  torch::ScalarType dtype_ = torch::kFloat32;
};

void check_same_length(const char* function, const char* name, size_t got, const char* first, size_t want) {
  if (got == want) return;
  throw std::invalid_argument(std::string(function) + ": " + name + " has length " + std::to_string(got) +
                              ", expected " + std::to_string(want) + " (the length of " + first + ")");
}

void check_eps(double eps) {
  if (!(eps > 0) || !std::isfinite(eps)) {
    throw std::invalid_argument("value rescaling needs eps > 0, got " + std::to_string(eps));
  }
}

void check_params(const NStepParams& p) {
  if (p.n < 1) throw std::invalid_argument("n_step_targets: n must be >= 1, got " + std::to_string(p.n));
  if (!(p.gamma >= 0 && p.gamma <= 1)) {
    throw std::invalid_argument("n_step_targets: gamma must be in [0, 1], got " + std::to_string(p.gamma));
  }
  check_eps(p.eps);
}

void check_burn_in(const char* function, int64_t burn_in, int64_t L) {
  if (burn_in < 0 || burn_in > L) {
    throw std::invalid_argument(std::string(function) + ": burn_in must be in [0, " + std::to_string(L) +
                                "] (the sequence length), got " + std::to_string(burn_in));
  }
}

void check_eta(double eta) {
  if (!(eta >= 0 && eta <= 1)) {
    throw std::invalid_argument("sequence priorities need eta in [0, 1], got " + std::to_string(eta));
  }
}

// The trace part (t >= burn_in) of each TdInput tensor, after checking shapes.
struct Trace {
  torch::Tensor targets, q_taken, mask;
  int64_t B = 0;
};

Trace trace_of(const char* function, const TdInput& in) {
  const MatrixCheck check(function, "targets", in.targets);
  check("q_taken", in.q_taken);
  check("mask", in.mask);
  check_burn_in(function, in.burn_in, check.L());
  const int64_t steps = check.L() - in.burn_in;
  return {in.targets.detach().narrow(0, in.burn_in, steps), in.q_taken.narrow(0, in.burn_in, steps),
          in.mask.detach().narrow(0, in.burn_in, steps), check.B()};
}

// The trace steps of one sequence that carry a loss: |delta_t| of each.
std::vector<double> trace_errors(const char* function, const TdStream& in) {
  check_same_length(function, "q_taken", in.q_taken.size(), "targets", in.targets.size());
  check_same_length(function, "mask", in.mask.size(), "targets", in.targets.size());
  check_burn_in(function, in.burn_in, static_cast<int64_t>(in.targets.size()));
  std::vector<double> errors;
  for (size_t t = static_cast<size_t>(in.burn_in); t < in.targets.size(); ++t) {
    if (in.mask[t] != 0) errors.push_back(std::abs(in.targets[t] - in.q_taken[t]));
  }
  return errors;
}

}  // namespace

double value_rescale(double x, double eps) {
  check_eps(eps);
  const double sign = x > 0 ? 1.0 : (x < 0 ? -1.0 : 0.0);
  return sign * (std::sqrt(std::abs(x) + 1) - 1) + eps * x;
}

double inverse_value_rescale(double x, double eps) {
  check_eps(eps);
  const double sign = x > 0 ? 1.0 : (x < 0 ? -1.0 : 0.0);
  const double root = (std::sqrt(1 + 4 * eps * (std::abs(x) + 1 + eps)) - 1) / (2 * eps);
  return sign * (root * root - 1);
}

torch::Tensor value_rescale(const torch::Tensor& x, double eps) {
  check_eps(eps);
  return torch::sign(x) * (torch::sqrt(x.abs() + 1) - 1) + eps * x;
}

torch::Tensor inverse_value_rescale(const torch::Tensor& x, double eps) {
  check_eps(eps);
  const torch::Tensor root = (torch::sqrt(1 + 4 * eps * (x.abs() + (1 + eps))) - 1) / (2 * eps);
  return torch::sign(x) * (root.square() - 1);
}

NStepTargets n_step_targets(const NStepInput& in, const NStepParams& params) {
  check_params(params);
  const MatrixCheck check("n_step_targets", "rewards", in.rewards);
  check("terminated", in.terminated);
  check("truncated", in.truncated);
  check("valid", in.valid);
  check("bootstrap_q", in.bootstrap_q);
  const int64_t L = check.L();
  const int64_t B = check.B();

  torch::NoGradGuard no_grad;
  const auto options = in.rewards.options();
  NStepTargets out{torch::zeros({L, B}, options), torch::zeros({L, B}, options)};
  const int64_t rows = L - 1;  // steps t = 0..L-2 can have a target
  if (rows < 1) return out;

  const torch::Tensor next_value = inverse_value_rescale(in.bootstrap_q.detach(), params.eps);
  const torch::Tensor not_terminated = 1 - in.terminated;
  const torch::Tensor not_truncated = 1 - in.truncated;
  // Row t of these is the target of step t; summing reward i of every row at once.
  torch::Tensor summing = in.valid.narrow(0, 0, rows).clone();  // 1 while row t still sums rewards
  torch::Tensor returns = torch::zeros({rows, B}, options);
  torch::Tensor bootstrap = torch::zeros({rows, B}, options);
  double discount = 1;
  for (int64_t i = 0; i < params.n && i < rows; ++i) {
    // Rows t < rows - i have step t + i <= L-2; the others stopped at an earlier i.
    const int64_t live = rows - i;
    const torch::Tensor active = summing.narrow(0, 0, live);
    returns.narrow(0, 0, live).add_(active * in.rewards.narrow(0, i, live), discount);
    discount *= params.gamma;
    // The window closes after this reward at the n-th reward, or when the next step is L-1.
    torch::Tensor closes = torch::zeros({live, 1}, options);
    if (i + 1 == params.n) {
      closes.fill_(1);
    } else {
      closes[live - 1].fill_(1);
    }
    const torch::Tensor go_on = active * not_terminated.narrow(0, i, live);
    const torch::Tensor bootstraps = go_on * torch::maximum(in.truncated.narrow(0, i, live), closes);
    bootstrap.narrow(0, 0, live).add_(bootstraps * next_value.narrow(0, i + 1, live), discount);
    summing.narrow(0, 0, live).copy_(go_on * not_truncated.narrow(0, i, live) * (1 - closes));
  }

  const torch::Tensor valid = in.valid.narrow(0, 0, rows);
  out.targets.narrow(0, 0, rows).copy_(value_rescale(returns + bootstrap, params.eps) * valid);
  out.mask.narrow(0, 0, rows).copy_(valid);
  return out;
}

NStepStreamTargets n_step_targets(const NStepStream& in, const NStepParams& params) {
  check_params(params);
  const size_t L = in.rewards.size();
  check_same_length("n_step_targets", "terminated", in.terminated.size(), "rewards", L);
  check_same_length("n_step_targets", "truncated", in.truncated.size(), "rewards", L);
  check_same_length("n_step_targets", "valid", in.valid.size(), "rewards", L);
  check_same_length("n_step_targets", "bootstrap_q", in.bootstrap_q.size(), "rewards", L);

  NStepStreamTargets out{std::vector<double>(L, 0.0), std::vector<double>(L, 0.0)};
  for (size_t t = 0; t + 1 < L; ++t) {
    if (in.valid[t] == 0) continue;
    double sum = 0;
    double discount = 1;
    bool bootstraps = true;
    size_t s = t;  // the step whose reward is summed next; ends as the bootstrap step
    for (int64_t k = 1;; ++k, ++s) {
      sum += discount * in.rewards[s];
      discount *= params.gamma;
      if (in.terminated[s] != 0) {
        bootstraps = false;
        break;
      }
      if (in.truncated[s] != 0 || k == params.n || s + 2 == L) break;
    }
    ++s;
    const double y =
        sum + (bootstraps ? discount * inverse_value_rescale(in.bootstrap_q[s], params.eps) : 0.0);
    out.targets[t] = value_rescale(y, params.eps);
    out.mask[t] = 1;
  }
  return out;
}

torch::Tensor sequence_losses(const TdInput& in) {
  const Trace trace = trace_of("sequence_losses", in);
  const torch::Tensor delta = trace.targets - trace.q_taken;
  const torch::Tensor steps = trace.mask.sum(0).clamp_min(1);
  return (0.5 * delta.square() * trace.mask).sum(0) / steps;
}

torch::Tensor r2d2_loss(const TdInput& in, const torch::Tensor& importance_weights) {
  const torch::Tensor losses = sequence_losses(in);
  if (!importance_weights.defined()) return losses.mean();
  if (importance_weights.sizes() != losses.sizes() || !importance_weights.is_floating_point()) {
    std::ostringstream os;
    os << "r2d2_loss: importance_weights must be a floating tensor of shape " << losses.sizes()
       << " (one per sequence), got " << importance_weights.sizes() << " of dtype "
       << importance_weights.dtype();
    throw std::invalid_argument(os.str());
  }
  return (importance_weights.detach() * losses).mean();
}

torch::Tensor sequence_priorities(const TdInput& in, double eta) {
  check_eta(eta);
  const Trace trace = trace_of("sequence_priorities", in);
  torch::NoGradGuard no_grad;
  if (trace.mask.size(0) == 0) return torch::zeros({trace.B}, trace.mask.options());
  const torch::Tensor errors = (trace.targets - trace.q_taken).abs() * trace.mask;
  const torch::Tensor mean = errors.sum(0) / trace.mask.sum(0).clamp_min(1);
  return eta * errors.amax(0) + (1 - eta) * mean;
}

double sequence_loss(const TdStream& in) {
  const std::vector<double> errors = trace_errors("sequence_loss", in);
  double sum = 0;
  for (double e : errors) sum += 0.5 * e * e;
  return errors.empty() ? 0.0 : sum / static_cast<double>(errors.size());
}

double sequence_priority(const TdStream& in, double eta) {
  check_eta(eta);
  const std::vector<double> errors = trace_errors("sequence_priority", in);
  if (errors.empty()) return 0;
  double sum = 0;
  for (double e : errors) sum += e;
  const double max = *std::max_element(errors.begin(), errors.end());
  return eta * max + (1 - eta) * sum / static_cast<double>(errors.size());
}

double ape_x_epsilon(int64_t i, int64_t n, double base, double alpha) {
  if (n < 1) throw std::invalid_argument("ape_x_epsilon: N must be >= 1, got " + std::to_string(n));
  base::require_index(i, n, "ape_x_epsilon: env index");
  if (n == 1) return base;
  return std::pow(base, 1 + alpha * static_cast<double>(i) / static_cast<double>(n - 1));
}

}  // namespace moonseed::engine
