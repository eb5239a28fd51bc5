// The actor-critic network the learner trains with V-trace, built from
// ModelSpec and shaped by the env's spec.
//
//   obs [N, obs...] --(uint8 scaled by 1/high: models/obs_scale.h)--> torso(s) --> policy head
//                                                          \-> value head
//
// kind "mlp": the observation is flattened into hidden linear layers.
// kind "layers" / "nature_cnn" / "impala_resnet": the declared layer list
// (models/torso.h) over the observation's own shape, e.g. [C, H, W] for
// convolutions.
// With shared_torso one torso feeds both heads; otherwise the policy and the
// value each get their own torso of the same layers.
//
// A declared list ending in lstm(n) makes a recurrent actor-critic (IMPALA's
// agent): one torso, whose features with the previous action (one-hot for
// Discrete, the vector for Box) and reward go into an LSTM of n units, which
// feeds both heads (shared_torso does not apply). It keeps a State (h, c) per env: step() is one step of it,
// unroll() runs T stored steps in one lstm_sequence call (models/sequence_lstm.h)
// with the state zeroed before every step whose reset is 1 (an episode's first
// observation); T step() calls equal one unroll() without resets (within float
// rounding). forward() is for feed-forward nets only.
// Discrete(n) actions: the policy head gives n categorical logits.
// Box(A) actions: the policy head gives the Gaussian mean; the log std is a
// learned, state-independent parameter of size A (initialised to init_log_std).
//
// Initialisation: orthogonal weights (gain sqrt(2) hidden, 0.01 policy head,
// 1.0 value head), zero biases; the tiny policy gain starts the policy near
// uniform / near zero mean.
//
// Construction throws std::invalid_argument for a config or spec it cannot
// build (unknown kind or activation, empty observation, non-positive sizes),
// naming the offending value. forward() throws std::invalid_argument when the
// observation shape does not match the spec.
//
// Thread-safety: as any torch::nn::Module. Concurrent forward passes are safe
// while nobody writes the parameters; the engine's weights lock ensures that.
#pragma once

#include <cstdint>
#include <utility>

#include <torch/torch.h>

#include "envs/spec.h"
#include "models/model_spec.h"
#include "models/torso.h"

namespace moonseed::models {

struct PolicyOutput {
  torch::Tensor logits_or_mean;  // [N, n] logits (discrete) or [N, A] Gaussian mean (box)
  torch::Tensor log_std;         // [N, A] (an expanded view), box only; undefined for discrete
  torch::Tensor value;           // [N] state value V(x)
};

class PolicyNetImpl : public torch::nn::Module {
 public:
  struct State {
    torch::Tensor h, c;  // [B, lstm] each; undefined for a feed-forward net
  };

  PolicyNetImpl(const ModelSpec& config, const envs::EnvSpec& spec);

  // obs: [N, obs shape...] in the observation space's dtype (float32 or uint8),
  // on the module's device. Throws std::logic_error on a recurrent net.
  PolicyOutput forward(torch::Tensor obs);

  bool recurrent() const { return lstm_size_ > 0; }
  int64_t state_size() const { return lstm_size_; }  // 0: feed-forward
  // Zeros [batch, lstm] on the module's device; empty for a feed-forward net.
  State initial_state(int64_t batch) const;
  // Recurrent nets: one step of N envs from `state` ([N, lstm] each).
  // prev_action: Discrete, int64 [N], the action taken before obs (-1 or any
  // index outside [0, n): none, at an episode's first step); Box, float [N, A]
  // (zeros: none). prev_reward: float [N], what that action returned (0: none).
  std::pair<PolicyOutput, State> step(const torch::Tensor& obs, const torch::Tensor& prev_action,
                                      const torch::Tensor& prev_reward, const State& state);
  // Recurrent nets: obs [T, B, obs...], prev_action [T, B] or [T, B, A],
  // prev_reward [T, B], reset [T, B] (1: zero the state before step t) from
  // state0 -> outputs of the T * B steps, time-major (row t * B + b), and the
  // state after step T-1.
  std::pair<PolicyOutput, State> unroll(const torch::Tensor& obs, const torch::Tensor& prev_action,
                                        const torch::Tensor& prev_reward, const torch::Tensor& reset,
                                        const State& state0);

  bool discrete() const { return discrete_; }
  // n for discrete actions, A (elements of the action box) for box actions.
  int64_t action_size() const { return action_size_; }
  // Elements of one observation.
  int64_t observation_size() const { return obs_size_; }

 private:
  torch::nn::Sequential make_torso(const ModelSpec& config, const char* name);
  // [N, obs...] -> [N, obs_size_] float, uint8 scaled.
  torch::Tensor scaled(const torch::Tensor& obs, int64_t n) const;
  PolicyOutput heads(const torch::Tensor& policy_features, const torch::Tensor& value_features);
  void check_state(const char* function, const State& state, int64_t batch) const;
  // [N, features] with the previous action and reward of each row appended.
  torch::Tensor core_input(const char* function, const torch::Tensor& features, const torch::Tensor& prev_action,
                           const torch::Tensor& prev_reward) const;
  void build_declared(const ModelSpec& config, const envs::EnvSpec& spec);
  void build_heads(const ModelSpec& config);

  bool discrete_ = true;
  bool uint8_obs_ = false;
  double uint8_scale_ = 1.0 / 255.0;  // uint8_obs_scale of the observation space
  bool declared_ = false;      // true: the torsos are Torso modules over the observation's shape
  std::vector<int64_t> obs_shape_;
  bool has_hidden_ = false;    // false: the heads read the flattened observation
  bool shared_torso_ = false;
  int64_t obs_size_ = 0;
  int64_t action_size_ = 0;
  int64_t torso_out_ = 0;
  torch::nn::Sequential policy_torso_{nullptr};
  torch::nn::Sequential value_torso_{nullptr};  // null when shared_torso
  Torso policy_layers_{nullptr};               // declared_ only
  Torso value_layers_{nullptr};                // declared_ and not shared_torso
  torch::nn::Linear policy_head_{nullptr};
  torch::nn::Linear value_head_{nullptr};
  torch::Tensor log_std_;  // [A], box only
  int64_t lstm_size_ = 0;
  torch::nn::LSTMCell lstm_{nullptr};  // recurrent only
};
TORCH_MODULE(PolicyNet);

}  // namespace moonseed::models
