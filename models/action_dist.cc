#include "models/action_dist.h"

#include <cmath>
#include <sstream>
#include <stdexcept>

namespace moonseed::models {
namespace {

// log(2 pi) / 2, the constant of a unit normal's log-density.
const double kHalfLogTwoPi = 0.5 * std::log(2.0 * 3.14159265358979323846);

bool gaussian(const PolicyOutput& out) { return out.log_std.defined(); }

torch::Tensor gaussian_log_prob(const PolicyOutput& out, const torch::Tensor& actions) {
  const torch::Tensor z = (actions - out.logits_or_mean) * torch::exp(-out.log_std);
  return (-0.5 * z.square() - out.log_std - kHalfLogTwoPi).sum(-1);
}

}  // namespace

ActionSample sample(const PolicyOutput& out) {
  ActionSample s;
  if (gaussian(out)) {
    {
      torch::NoGradGuard no_grad;
      const torch::Tensor noise = torch::randn_like(out.logits_or_mean);
      s.actions = (out.logits_or_mean + out.log_std.exp() * noise).to(torch::kFloat32);
    }
    s.logp = gaussian_log_prob(out, s.actions);
  } else {
    const torch::Tensor log_probs = torch::log_softmax(out.logits_or_mean, -1);
    {
      torch::NoGradGuard no_grad;
      s.actions = torch::multinomial(log_probs.exp(), 1).squeeze(-1);
    }
    s.logp = log_probs.gather(-1, s.actions.unsqueeze(-1)).squeeze(-1);
  }
  return s;
}

torch::Tensor greedy(const PolicyOutput& out) {
  torch::NoGradGuard no_grad;
  if (gaussian(out)) return out.logits_or_mean.to(torch::kFloat32);
  return out.logits_or_mean.argmax(-1);
}

torch::Tensor log_prob(const PolicyOutput& out, const torch::Tensor& actions) {
  const torch::Tensor& p = out.logits_or_mean;
  if (gaussian(out)) {
    if (!actions.defined() || actions.sizes() != p.sizes()) {
      std::ostringstream os;
      os << "log_prob: Gaussian actions must have the mean's shape " << p.sizes() << ", got "
         << (actions.defined() ? actions.sizes() : torch::IntArrayRef{});
      throw std::invalid_argument(os.str());
    }
    return gaussian_log_prob(out, actions);
  }
  if (!actions.defined() || actions.dim() != 1 || actions.size(0) != p.size(0) ||
      actions.scalar_type() != torch::kInt64) {
    std::ostringstream os;
    os << "log_prob: discrete actions must be int64 [" << p.size(0) << "], got ";
    if (actions.defined()) {
      os << actions.scalar_type() << " " << actions.sizes();
    } else {
      os << "undefined";
    }
    throw std::invalid_argument(os.str());
  }
  return torch::log_softmax(p, -1).gather(-1, actions.unsqueeze(-1)).squeeze(-1);
}

torch::Tensor entropy(const PolicyOutput& out) {
  if (gaussian(out)) {
    // Per dimension: 1/2 + log(2 pi)/2 + log sigma.
    return (out.log_std + (0.5 + kHalfLogTwoPi)).sum(-1);
  }
  const torch::Tensor log_probs = torch::log_softmax(out.logits_or_mean, -1);
  return -(log_probs.exp() * log_probs).sum(-1);
}

}  // namespace moonseed::models
