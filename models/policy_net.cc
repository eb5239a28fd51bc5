#include "models/policy_net.h"

#include <cmath>
#include <sstream>
#include <stdexcept>
#include <string>

namespace moonseed::models {
namespace {

int64_t product(const std::vector<int64_t>& shape, const char* what) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d <= 0) {
      throw std::invalid_argument(std::string("PolicyNet: ") + what +
                                  " shape has a non-positive dimension " + std::to_string(d));
    }
    n *= d;
  }
  return n;
}

void init_linear(torch::nn::Linear& layer, double gain) {
  torch::NoGradGuard no_grad;
  torch::nn::init::orthogonal_(layer->weight, gain);
  torch::nn::init::zeros_(layer->bias);
}

}  // namespace

PolicyNetImpl::PolicyNetImpl(const engine::ModelConfig& config, const envs::EnvSpec& spec) {
  if (config.kind != "mlp") {
    throw std::invalid_argument("PolicyNet: unknown model kind \"" + config.kind +
                                "\" (only \"mlp\" is built)");
  }
  if (config.activation != "tanh" && config.activation != "relu") {
    throw std::invalid_argument("PolicyNet: unknown activation \"" + config.activation +
                                "\" (expected tanh or relu)");
  }
  if (spec.observation.kind != envs::SpaceKind::kBox || spec.observation.shape.empty()) {
    throw std::invalid_argument("PolicyNet: the observation must be a box with a shape, got " +
                                std::string(spec.observation.kind == envs::SpaceKind::kBox
                                                ? "a box with an empty shape"
                                                : "a discrete space"));
  }
  obs_size_ = product(spec.observation.shape, "observation");
  uint8_obs_ = spec.observation.dtype == envs::DType::kUInt8;

  if (spec.action.kind == envs::SpaceKind::kDiscrete) {
    if (spec.action.n <= 0) {
      throw std::invalid_argument("PolicyNet: discrete action space needs n > 0, got n = " +
                                  std::to_string(spec.action.n));
    }
    discrete_ = true;
    action_size_ = spec.action.n;
  } else {
    if (spec.action.shape.empty()) {
      throw std::invalid_argument("PolicyNet: box action space has an empty shape");
    }
    discrete_ = false;
    action_size_ = product(spec.action.shape, "action");
  }

  has_hidden_ = !config.hidden.empty();
  shared_torso_ = config.shared_torso;
  policy_torso_ = register_module("policy_torso", make_torso(config, "policy"));
  if (!config.shared_torso) {
    value_torso_ = register_module("value_torso", make_torso(config, "value"));
  }
  torso_out_ = config.hidden.empty() ? obs_size_ : config.hidden.back();

  policy_head_ = register_module("policy_head", torch::nn::Linear(torso_out_, action_size_));
  value_head_ = register_module("value_head", torch::nn::Linear(torso_out_, 1));
  init_linear(policy_head_, 0.01);
  init_linear(value_head_, 1.0);
  if (!discrete_) {
    log_std_ = register_parameter("log_std", torch::full({action_size_}, config.init_log_std));
  }
}

torch::nn::Sequential PolicyNetImpl::make_torso(const engine::ModelConfig& config,
                                                const char* name) {
  torch::nn::Sequential torso;
  int64_t in = obs_size_;
  for (int64_t width : config.hidden) {
    if (width <= 0) {
      throw std::invalid_argument(std::string("PolicyNet: ") + name +
                                  " hidden layer width must be positive, got " +
                                  std::to_string(width));
    }
    torch::nn::Linear layer(in, width);
    init_linear(layer, std::sqrt(2.0));
    torso->push_back(layer);
    if (config.activation == "tanh") {
      torso->push_back(torch::nn::Tanh());
    } else {
      torso->push_back(torch::nn::ReLU());
    }
    in = width;
  }
  return torso;
}

PolicyOutput PolicyNetImpl::forward(torch::Tensor obs) {
  if (!obs.defined() || obs.dim() < 1 || (obs.size(0) > 0 && obs[0].numel() != obs_size_)) {
    std::ostringstream os;
    os << "PolicyNet::forward: expected observations [N, ...] with " << obs_size_
       << " elements each, got " << (obs.defined() ? obs.sizes() : torch::IntArrayRef{});
    throw std::invalid_argument(os.str());
  }
  const int64_t n = obs.size(0);
  torch::Tensor x = obs.reshape({n, obs_size_});
  if (uint8_obs_) {
    x = x.to(torch::kFloat32) * (1.0 / 255.0);
  } else if (x.scalar_type() != torch::kFloat32) {
    x = x.to(torch::kFloat32);
  }

  const torch::Tensor policy_features = has_hidden_ ? policy_torso_->forward(x) : x;
  const torch::Tensor value_features =
      (has_hidden_ && !shared_torso_) ? value_torso_->forward(x) : policy_features;

  PolicyOutput out;
  out.logits_or_mean = policy_head_->forward(policy_features);
  out.value = value_head_->forward(value_features).squeeze(-1);
  if (!discrete_) out.log_std = log_std_.unsqueeze(0).expand({n, action_size_});
  return out;
}

}  // namespace moonseed::models
