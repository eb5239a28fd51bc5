#include "models/q_net.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>
#include <string>
#include <tuple>

#include "base/text.h"
#include "models/obs_scale.h"
#include "models/sequence_lstm.h"

namespace moonseed::models {
namespace {

std::string dims_text(torch::IntArrayRef dims) { return base::shape_text(dims.vec()); }

enum class Element { kInt64, kFloating };

// `name` of `function` must have exactly the sizes `want` (and the element kind).
void require(const char* function, const char* name, const torch::Tensor& t, const std::vector<int64_t>& want,
             Element element) {
  const bool int64 = element == Element::kInt64;
  if (t.defined() && t.sizes() == torch::IntArrayRef(want) &&
      (int64 ? t.scalar_type() == torch::kInt64 : t.is_floating_point())) {
    return;
  }
  const std::string what = int64 ? "an int64 tensor" : "a floating tensor";
  std::string got = "an undefined tensor";
  if (t.defined()) {
    std::ostringstream os;
    os << dims_text(t.sizes()) << " of dtype " << t.dtype();
    got = os.str();
  }
  throw std::invalid_argument(std::string("QNet::") + function + ": " + name + " must be " + what +
                              " of shape " + dims_text(want) + ", got " + got);
}

std::vector<int64_t> prepend(std::vector<int64_t> front, const std::vector<int64_t>& back) {
  front.insert(front.end(), back.begin(), back.end());
  return front;
}

torch::nn::Sequential make_head(int64_t in, int64_t hidden, int64_t out) {
  auto orthogonal = [](torch::nn::Linear& layer, double gain) {
    torch::NoGradGuard no_grad;
    torch::nn::init::orthogonal_(layer->weight, gain);
    layer->bias.zero_();
  };
  torch::nn::Sequential head;
  if (hidden > 0) {
    torch::nn::Linear layer(in, hidden);
    orthogonal(layer, std::sqrt(2.0));
    head->push_back(layer);
    head->push_back(torch::nn::ReLU());
    in = hidden;
  }
  torch::nn::Linear output(in, out);
  orthogonal(output, 1.0);
  head->push_back(output);
  return head;
}

// Copies every tensor of `from` into the same-named tensor of `to`, after
// checking that both hold the same names and shapes.
void copy_tensors(const torch::OrderedDict<std::string, torch::Tensor>& from,
                  torch::OrderedDict<std::string, torch::Tensor>& to, const char* kind) {
  if (from.size() != to.size()) {
    throw std::invalid_argument("QNet::copy_weights_from: the source has " + std::to_string(from.size()) +
                                " " + kind + ", this net " + std::to_string(to.size()));
  }
  for (const auto& item : from) {
    torch::Tensor* target = to.find(item.key());
    if (target == nullptr || target->sizes() != item.value().sizes()) {
      throw std::invalid_argument("QNet::copy_weights_from: source tensor '" + item.key() + "' of shape " + dims_text(item.value().sizes()) +
                                  (target == nullptr
                                       ? " does not exist in this net"
                                       : " differs from this net's " + dims_text(target->sizes())));
    }
  }
  torch::NoGradGuard no_grad;
  for (const auto& item : from) to.find(item.key())->copy_(item.value());
}

}  // namespace

QNetSpec r2d2_atari_spec() {
  QNetSpec spec;
  spec.torso = preset_layers("nature_cnn");
  spec.lstm = 512;
  spec.head_hidden = 512;
  spec.dueling = true;
  spec.prev_action_reward = true;
  return spec;
}

QNetSpec qnet_spec(const ModelSpec& model) {
  const RecurrentSplit split = split_recurrent(model_layers(model));
  QNetSpec spec;
  spec.torso = split.torso;
  spec.lstm = split.lstm_size;
  return spec;
}

QNetImpl::QNetImpl(const QNetSpec& spec, const envs::EnvSpec& env_spec) : spec_(spec), env_spec_(env_spec) {
  const envs::Space& action = env_spec.action;
  if (action.kind != envs::SpaceKind::kDiscrete) {
    throw std::invalid_argument("QNet needs a Discrete action space, got a Box action space of shape " +
                                dims_text(action.shape) + " (env " + env_spec.id + ")");
  }
  if (action.n < 1) {
    throw std::invalid_argument("QNet needs a Discrete action space with n >= 1, got n = " +
                                std::to_string(action.n));
  }
  const envs::Space& observation = env_spec.observation;
  int64_t obs_size = 1;
  for (int64_t d : observation.shape) obs_size *= d;
  if (observation.kind != envs::SpaceKind::kBox || observation.shape.empty() || obs_size < 1) {
    throw std::invalid_argument("QNet needs a Box observation with a non-empty shape, got " +
                                std::string(observation.kind == envs::SpaceKind::kBox
                                                ? "a Box of shape " + dims_text(observation.shape)
                                                : "a Discrete space"));
  }
  if (spec.lstm < 0 || spec.head_hidden < 0) {
    throw std::invalid_argument(
        "QNet: lstm and head_hidden must be >= 0, got lstm = " + std::to_string(spec.lstm) +
        ", head_hidden = " + std::to_string(spec.head_hidden));
  }
  obs_shape_ = observation.shape;
  uint8_obs_ = observation.dtype == envs::DType::kUInt8;
  uint8_scale_ = uint8_obs_scale(observation);
  num_actions_ = action.n;

  int64_t features = obs_size;
  if (!spec.torso.empty()) {
    try {
      torso_ = register_module("torso", Torso(spec.torso, obs_shape_));
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(std::string("QNet torso: ") + e.what());
    }
    features = torso_->out_features();
  }
  const int64_t core_in = features + (spec.prev_action_reward ? num_actions_ + 1 : 0);
  int64_t core_out = core_in;
  if (spec.lstm > 0) {
    lstm_ = register_module("lstm", torch::nn::LSTMCell(core_in, spec.lstm));
    core_out = spec.lstm;
  }
  if (spec.dueling) {
    value_head_ = register_module("value_head", make_head(core_out, spec.head_hidden, 1));
  }
  advantage_head_ = register_module(spec.dueling ? "advantage_head" : "q_head",
                                    make_head(core_out, spec.head_hidden, num_actions_));
}

QNetImpl::State QNetImpl::initial_state(int64_t batch) const {
  if (spec_.lstm == 0) return {};
  const torch::TensorOptions options = torch::TensorOptions().device(parameters().front().device());
  return {torch::zeros({batch, spec_.lstm}, options), torch::zeros({batch, spec_.lstm}, options)};
}

void QNetImpl::check_obs(const char* function, const torch::Tensor& obs, int64_t leading) const {
  const auto expected = static_cast<int64_t>(obs_shape_.size()) + leading;
  if (obs.defined() && obs.dim() == expected &&
      std::equal(obs_shape_.begin(), obs_shape_.end(), obs.sizes().begin() + leading)) {
    return;
  }
  std::string want = dims_text(obs_shape_);
  want = (leading == 1 ? "[B, " : "[T, B, ") + want.substr(1);
  throw std::invalid_argument(std::string("QNet::") + function + ": obs must be " + want +
                              " (the env's observation shape " + dims_text(obs_shape_) + " after " +
                              (leading == 1 ? "the batch" : "time and batch") + "), got " +
                              (obs.defined() ? dims_text(obs.sizes()) : std::string("an undefined tensor")));
}

void QNetImpl::check_state(const char* function, const State& state, int64_t batch) const {
  if (spec_.lstm == 0) return;
  require(function, "state.h", state.h, {batch, spec_.lstm}, Element::kFloating);
  require(function, "state.c", state.c, {batch, spec_.lstm}, Element::kFloating);
}

torch::Tensor QNetImpl::embed(const torch::Tensor& obs, const torch::Tensor& prev_action,
                              const torch::Tensor& prev_reward) {
  torch::Tensor x = uint8_obs_ ? obs.to(torch::kFloat32) * uint8_scale_ : obs.to(torch::kFloat32);
  x = torso_ ? torso_->forward(x) : x.reshape({x.size(0), -1});
  if (!spec_.prev_action_reward) return x;
  // A comparison rather than one_hot(): out-of-range indices give zeros, with no device sync.
  const torch::Tensor one_hot =
      (prev_action.unsqueeze(1) == torch::arange(num_actions_, prev_action.options())).to(x.scalar_type());
  return torch::cat({x, one_hot, prev_reward.to(x.scalar_type()).unsqueeze(1)}, 1);
}

QNetImpl::Streams QNetImpl::heads(const torch::Tensor& core_out) {
  Streams s;
  if (!spec_.dueling) {
    s.q = advantage_head_->forward(core_out);
    return s;
  }
  s.value = value_head_->forward(core_out).squeeze(-1);
  s.advantage = advantage_head_->forward(core_out);
  s.q = s.value.unsqueeze(-1) + s.advantage - s.advantage.mean(-1, /*keepdim=*/true);
  return s;
}

QNetImpl::Streams QNetImpl::run_step(const char* function, const torch::Tensor& obs,
                                     const torch::Tensor& prev_action, const torch::Tensor& prev_reward,
                                     const State& state) {
  check_obs(function, obs, 1);
  const int64_t B = obs.size(0);
  if (spec_.prev_action_reward) {
    require(function, "prev_action", prev_action, {B}, Element::kInt64);
    require(function, "prev_reward", prev_reward, {B}, Element::kFloating);
  }
  check_state(function, state, B);
  torch::Tensor core = embed(obs, prev_action, prev_reward);
  State next;
  if (lstm_) {
    std::tie(next.h, next.c) = lstm_->forward(core, std::make_tuple(state.h, state.c));
    core = next.h;
  }
  Streams s = heads(core);
  s.state = next;
  return s;
}

std::pair<torch::Tensor, QNetImpl::State> QNetImpl::step(const torch::Tensor& obs,
                                                         const torch::Tensor& prev_action,
                                                         const torch::Tensor& prev_reward,
                                                         const State& state) {
  Streams s = run_step("step", obs, prev_action, prev_reward, state);
  return {s.q, s.state};
}

QNetImpl::Streams QNetImpl::forward_streams(const torch::Tensor& obs, const torch::Tensor& prev_action,
                                            const torch::Tensor& prev_reward, const State& state) {
  if (!spec_.dueling) throw std::logic_error("QNet::forward_streams: this net has no dueling streams");
  return run_step("forward_streams", obs, prev_action, prev_reward, state);
}

std::pair<torch::Tensor, QNetImpl::State> QNetImpl::unroll(const torch::Tensor& obs,
                                                           const torch::Tensor& prev_action,
                                                           const torch::Tensor& prev_reward,
                                                           const torch::Tensor& reset, const State& state0) {
  check_obs("unroll", obs, 2);
  const int64_t T = obs.size(0);
  const int64_t B = obs.size(1);
  if (spec_.prev_action_reward) {
    require("unroll", "prev_action", prev_action, {T, B}, Element::kInt64);
    require("unroll", "prev_reward", prev_reward, {T, B}, Element::kFloating);
  }
  require("unroll", "reset", reset, {T, B}, Element::kFloating);
  check_state("unroll", state0, B);

  // Torso and heads see all T x B steps in one batch; only the LSTM walks time.
  const auto steps = [&](const torch::Tensor& t) { return t.defined() ? t.reshape({T * B}) : t; };
  torch::Tensor core =
      embed(obs.reshape(prepend({T * B}, obs_shape_)), steps(prev_action), steps(prev_reward));
  State state = state0;
  if (lstm_) {
    const torch::Tensor inputs = core.reshape({T, B, core.size(1)});
    const LstmSequence run =
        lstm_sequence(inputs, state.h, state.c, (1 - reset).to(inputs.scalar_type()), lstm_weights(*lstm_));
    state = {run.h, run.c};
    core = run.out.reshape({T * B, spec_.lstm});
  }
  return {heads(core).q.reshape({T, B, num_actions_}), state};
}

QNet QNetImpl::clone_net() const {
  QNet copy(spec_, env_spec_);
  const torch::Tensor first = parameters().front();
  copy->to(first.device(), first.scalar_type());
  copy->copy_weights_from(*this);
  copy->train(is_training());
  return copy;
}

void QNetImpl::copy_weights_from(const QNetImpl& source) {
  auto parameters = named_parameters();
  copy_tensors(source.named_parameters(), parameters, "parameters");
  auto buffers = named_buffers();
  copy_tensors(source.named_buffers(), buffers, "buffers");
}

}  // namespace moonseed::models
