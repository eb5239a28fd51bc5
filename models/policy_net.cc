#include "models/policy_net.h"
#include "models/obs_scale.h"
#include "models/sequence_lstm.h"

#include <cmath>
#include <sstream>
#include <stdexcept>
#include <string>
#include <tuple>

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
  RecurrentSplit split;
  try {
    split = split_recurrent(model_layers(config));
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string("PolicyNet: model ") + e.what());
  }
  declared_ = true;
  lstm_size_ = split.lstm_size;
  shared_torso_ = config.shared_torso || lstm_size_ > 0;  // one torso and core feed both heads
  obs_shape_ = spec.observation.shape;
  torso_out_ = obs_size_;
  if (!split.torso.empty() || lstm_size_ == 0) {
    try {
      policy_layers_ = register_module("policy_layers", Torso(split.torso, obs_shape_));
      if (!shared_torso_) value_layers_ = register_module("value_layers", Torso(split.torso, obs_shape_));
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(std::string("PolicyNet: model.layers ") + e.what());
    }
    torso_out_ = policy_layers_->out_features();
  }
  if (lstm_size_ > 0) {
    lstm_ = register_module("lstm", torch::nn::LSTMCell(torso_out_ + action_size_ + 1, lstm_size_));
    torso_out_ = lstm_size_;
  }
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

torch::Tensor PolicyNetImpl::scaled(const torch::Tensor& obs, int64_t n) const {
  torch::Tensor x = obs.reshape({n, obs_size_});
  if (uint8_obs_) return x.to(torch::kFloat32) * uint8_scale_;
  return x.scalar_type() == torch::kFloat32 ? x : x.to(torch::kFloat32);
}

PolicyOutput PolicyNetImpl::heads(const torch::Tensor& policy_features, const torch::Tensor& value_features) {
  PolicyOutput out;
  out.logits_or_mean = policy_head_->forward(policy_features);
  out.value = value_head_->forward(value_features).squeeze(-1);
  if (!discrete_) out.log_std = log_std_.unsqueeze(0).expand({policy_features.size(0), action_size_});
  return out;
}

PolicyOutput PolicyNetImpl::forward(torch::Tensor obs) {
  if (recurrent()) {
    throw std::logic_error("PolicyNet::forward: a recurrent net acts with step() and trains with unroll()");
  }
  if (!obs.defined() || obs.dim() < 1 || (obs.size(0) > 0 && obs[0].numel() != obs_size_)) {
    std::ostringstream os;
    os << "PolicyNet::forward: expected observations [N, ...] with " << obs_size_
       << " elements each, got " << (obs.defined() ? obs.sizes() : torch::IntArrayRef{});
    throw std::invalid_argument(os.str());
  }
  const int64_t n = obs.size(0);
  torch::Tensor x = scaled(obs, n);
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
  return heads(policy_features, value_features);
}

PolicyNetImpl::State PolicyNetImpl::initial_state(int64_t batch) const {
  if (!recurrent()) return {};
  const torch::TensorOptions options = torch::TensorOptions().device(parameters().front().device());
  return {torch::zeros({batch, lstm_size_}, options), torch::zeros({batch, lstm_size_}, options)};
}

void PolicyNetImpl::check_state(const char* function, const State& state, int64_t batch) const {
  if (!recurrent()) throw std::logic_error(std::string("PolicyNet::") + function + ": a feed-forward net has no state");
  for (const torch::Tensor* t : {&state.h, &state.c}) {
    if (!t->defined() || t->sizes() != torch::IntArrayRef({batch, lstm_size_})) {
      std::ostringstream os;
      os << "PolicyNet::" << function << ": the state's h and c must be [" << batch << ", " << lstm_size_ << "], got "
         << (t->defined() ? t->sizes() : torch::IntArrayRef{});
      throw std::invalid_argument(os.str());
    }
  }
}

torch::Tensor PolicyNetImpl::core_input(const char* function, const torch::Tensor& features,
                                        const torch::Tensor& prev_action, const torch::Tensor& prev_reward) const {
  const int64_t n = features.size(0);
  const bool action_ok = prev_action.defined() && prev_action.numel() == n * (discrete_ ? 1 : action_size_) &&
                         (discrete_ ? prev_action.scalar_type() == torch::kInt64 : prev_action.is_floating_point());
  if (!action_ok || !prev_reward.defined() || prev_reward.numel() != n) {
    std::ostringstream os;
    os << "PolicyNet::" << function << ": prev_action must be " << (discrete_ ? "int64 with one" : "float with ")
       << (discrete_ ? "" : std::to_string(action_size_)) << " element(s) per step and prev_reward one float per "
       << "step, for " << n << " steps; got " << (prev_action.defined() ? prev_action.sizes() : torch::IntArrayRef{})
       << " and " << (prev_reward.defined() ? prev_reward.sizes() : torch::IntArrayRef{});
    throw std::invalid_argument(os.str());
  }
  torch::Tensor action;
  if (discrete_) {
    // A comparison rather than one_hot(): an index outside [0, n) gives zeros, with no device sync.
    action = (prev_action.reshape({n, 1}) == torch::arange(action_size_, prev_action.options()))
                 .to(features.scalar_type());
  } else {
    action = prev_action.reshape({n, action_size_}).to(features.scalar_type());
  }
  return torch::cat({features, action, prev_reward.reshape({n, 1}).to(features.scalar_type())}, 1);
}

std::pair<PolicyOutput, PolicyNetImpl::State> PolicyNetImpl::step(const torch::Tensor& obs,
                                                                  const torch::Tensor& prev_action,
                                                                  const torch::Tensor& prev_reward,
                                                                  const State& state) {
  const int64_t n = obs.defined() && obs.dim() >= 1 ? obs.size(0) : 0;
  check_state("step", state, n);
  if (obs.numel() != n * obs_size_) {
    std::ostringstream os;
    os << "PolicyNet::step: expected observations [N, ...] with " << obs_size_ << " elements each, got "
       << obs.sizes();
    throw std::invalid_argument(os.str());
  }
  std::vector<int64_t> shape = {n};
  shape.insert(shape.end(), obs_shape_.begin(), obs_shape_.end());
  torch::Tensor x = scaled(obs, n);
  if (policy_layers_) x = policy_layers_->forward(x.reshape(shape));
  x = core_input("step", x, prev_action, prev_reward);
  State next;
  std::tie(next.h, next.c) = lstm_->forward(x, std::make_tuple(state.h, state.c));
  return {heads(next.h, next.h), next};
}

std::pair<PolicyOutput, PolicyNetImpl::State> PolicyNetImpl::unroll(const torch::Tensor& obs,
                                                                    const torch::Tensor& prev_action,
                                                                    const torch::Tensor& prev_reward,
                                                                    const torch::Tensor& reset,
                                                                    const State& state0) {
  const int64_t T = obs.defined() && obs.dim() >= 2 ? obs.size(0) : 0;
  const int64_t B = obs.defined() && obs.dim() >= 2 ? obs.size(1) : 0;
  check_state("unroll", state0, B);
  if (obs.numel() != T * B * obs_size_ || !reset.defined() || reset.sizes() != torch::IntArrayRef({T, B})) {
    std::ostringstream os;
    os << "PolicyNet::unroll: expected observations [T, B, ...] with " << obs_size_
       << " elements each and reset [T, B], got " << (obs.defined() ? obs.sizes() : torch::IntArrayRef{})
       << " and " << (reset.defined() ? reset.sizes() : torch::IntArrayRef{});
    throw std::invalid_argument(os.str());
  }
  std::vector<int64_t> shape = {T * B};
  shape.insert(shape.end(), obs_shape_.begin(), obs_shape_.end());
  torch::Tensor x = scaled(obs, T * B);
  if (policy_layers_) x = policy_layers_->forward(x.reshape(shape));
  x = core_input("unroll", x, prev_action, prev_reward);
  const LstmSequence r = lstm_sequence(x.reshape({T, B, x.size(1)}), state0.h, state0.c,
                                       (1 - reset.to(x.scalar_type())), lstm_weights(*lstm_));
  const torch::Tensor features = r.out.reshape({T * B, lstm_size_});
  return {heads(features, features), {r.h, r.c}};
}

}  // namespace moonseed::models
