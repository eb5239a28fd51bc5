#include "engine/learner/optimizer.h"

#include <cmath>
#include <stdexcept>

namespace moonseed::engine {

std::unique_ptr<torch::optim::Optimizer> make_optimizer(const OptimizerConfig& config,
                                                        std::vector<torch::Tensor> params) {
  if (!(config.lr > 0) || !(config.eps > 0)) {
    throw std::invalid_argument("make_optimizer: lr and eps must be positive, got lr = " +
                                std::to_string(config.lr) +
                                ", eps = " + std::to_string(config.eps));
  }
  if (config.kind == "adam") {
    return std::make_unique<torch::optim::Adam>(
        std::move(params), torch::optim::AdamOptions(config.lr).eps(config.eps));
  }
  if (config.kind == "rmsprop") {
    return std::make_unique<torch::optim::RMSprop>(std::move(params),
                                                   torch::optim::RMSpropOptions(config.lr)
                                                       .alpha(config.rmsprop_alpha)
                                                       .eps(config.eps)
                                                       .momentum(config.rmsprop_momentum));
  }
  throw std::invalid_argument("make_optimizer: unknown optimizer kind \"" + config.kind +
                              "\" (expected adam or rmsprop)");
}

std::string optimizer_kind(const torch::optim::Optimizer& optimizer) {
  if (dynamic_cast<const torch::optim::Adam*>(&optimizer) != nullptr) return "adam";
  if (dynamic_cast<const torch::optim::RMSprop*>(&optimizer) != nullptr) return "rmsprop";
  return "unknown";
}

void set_learning_rate(torch::optim::Optimizer& optimizer, double lr) {
  if (!(lr >= 0)) {
    throw std::invalid_argument("set_learning_rate: lr must be >= 0, got " + std::to_string(lr));
  }
  for (auto& group : optimizer.param_groups()) group.options().set_lr(lr);
}

void zero_gradients(const std::vector<torch::Tensor>& params) {
  torch::NoGradGuard no_grad;
  for (const torch::Tensor& p : params) {
    if (p.grad().defined()) {
      p.grad().zero_();
    } else {
      const_cast<torch::Tensor&>(p).mutable_grad() = torch::zeros_like(p);
    }
  }
}

double clip_grad_norm(const std::vector<torch::Tensor>& params, double max_norm) {
  if (max_norm < 0) {
    throw std::invalid_argument("clip_grad_norm: max_norm must be >= 0, got " +
                                std::to_string(max_norm));
  }
  std::vector<torch::Tensor> grads;
  for (const auto& p : params) {
    if (p.grad().defined()) grads.push_back(p.grad());
  }
  if (grads.empty()) return 0.0;

  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> norms;
  norms.reserve(grads.size());
  // Accumulate in float64 so that many small float32 gradients do not lose the norm.
  for (const auto& g : grads) norms.push_back(g.to(torch::kFloat64).norm());
  const double total = torch::stack(norms).norm().item<double>();
  if (max_norm > 0 && std::isfinite(total) && total > max_norm) {
    const double scale = max_norm / total;
    for (auto& g : grads) g.mul_(scale);
  }
  return total;
}

}  // namespace moonseed::engine
