#include "models/policy_net.h"
#include "models/obs_scale.h"

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

PolicyNetImpl::PolicyNetImpl(const ModelSpec& config, const envs::EnvSpec& spec) {
  if (spec.observation.kind != envs::SpaceKind::kBox || spec.observation.shape.empty()) {
    throw std::invalid_argument("PolicyNet: the observation must be a box with a shape, got " +
                                std::string(spec.observation.kind == envs::SpaceKind::kBox
                                                ? "a box with an empty shape"
                                                : "a discrete space"));
  }
  obs_size_ = product(spec.observation.shape, "observation");
  uint8_obs_ = spec.observation.dtype == envs::DType::kUInt8;
  uint8_scale_ = uint8_obs_scale(spec.observation);

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

  if (config.kind != "mlp") {
    build_declared(config, spec);
    return;
  }
  if (config.activation != "tanh" && config.activation != "relu") {
    throw std::invalid_argument("PolicyNet: unknown activation \"" + config.activation +
                                "\" (expected tanh or relu)");
  }
  has_hidden_ = !config.hidden.empty();
  shared_torso_ = config.shared_torso;
  policy_torso_ = register_module("policy_torso", make_torso(config, "policy"));
  if (!config.shared_torso) {
    value_torso_ = register_module("value_torso", make_torso(config, "value"));
  }
  torso_out_ = config.hidden.empty() ? obs_size_ : config.hidden.back();
  build_heads(config);
}

void PolicyNetImpl::build_declared(const ModelSpec& config, const envs::EnvSpec& spec) {
  std::vector<LayerSpec> layers;
  try {
    layers = model_layers(config);
    if (split_recurrent(layers).lstm_size > 0) {
      throw std::invalid_argument(
          "an lstm layer makes a recurrent model, which V-trace cannot train yet (it keeps no per-env "
          "recurrent state); recurrent models train with algo = \"r2d2\"");
    }
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string("PolicyNet: model ") + e.what());
  }
  declared_ = true;
  shared_torso_ = config.shared_torso;
  obs_shape_ = spec.observation.shape;
  try {
    policy_layers_ = register_module("policy_layers", Torso(layers, obs_shape_));
    if (!shared_torso_) value_layers_ = register_module("value_layers", Torso(layers, obs_shape_));
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string("PolicyNet: model.layers ") + e.what());
  }
  torso_out_ = policy_layers_->out_features();
  build_heads(config);
}

void PolicyNetImpl::build_heads(const ModelSpec& config) {
  policy_head_ = register_module("policy_head", torch::nn::Linear(torso_out_, action_size_));
  value_head_ = register_module("value_head", torch::nn::Linear(torso_out_, 1));
  init_linear(policy_head_, 0.01);
  init_linear(value_head_, 1.0);
  if (!discrete_) {
    log_std_ = register_parameter("log_std", torch::full({action_size_}, config.init_log_std));
  }
}

torch::nn::Sequential PolicyNetImpl::make_torso(const ModelSpec& config,
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
    x = x.to(torch::kFloat32) * uint8_scale_;
  } else if (x.scalar_type() != torch::kFloat32) {
    x = x.to(torch::kFloat32);
  }

  torch::Tensor policy_features;
  torch::Tensor value_features;
  if (declared_) {
    std::vector<int64_t> shape = {n};
    shape.insert(shape.end(), obs_shape_.begin(), obs_shape_.end());
    x = x.reshape(shape);
    policy_features = policy_layers_->forward(x);
    value_features = shared_torso_ ? policy_features : value_layers_->forward(x);
  } else {
    policy_features = has_hidden_ ? policy_torso_->forward(x) : x;
    value_features = (has_hidden_ && !shared_torso_) ? value_torso_->forward(x) : policy_features;
  }

  PolicyOutput out;
  out.logits_or_mean = policy_head_->forward(policy_features);
  out.value = value_head_->forward(value_features).squeeze(-1);
  if (!discrete_) out.log_std = log_std_.unsqueeze(0).expand({n, action_size_});
  return out;
}

}  // namespace moonseed::models
