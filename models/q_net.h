// The recurrent dueling Q network of R2D2 (Kapturowski et al. 2019):
//
//   obs --(uint8 scaled by 1/high: models/obs_scale.h)--> torso --+-- concat one-hot a_{t-1}, r_{t-1} --> LSTM --> heads
//                                            (when prev_action_reward)
//   dueling heads: Q(x, a) = V(x) + A(x, a) - mean_a' A(x, a')
//
// Q values are in h-space (engine/r2d2/r2d2.h): the network learns h(y) targets.
// Each dueling stream is linear -> relu -> linear with head_hidden units, or
// one linear layer when head_hidden is 0; a plain (non-dueling) head is the
// same with A outputs. Without an LSTM (lstm = 0) the network is feed-forward
// and State is empty. Initialisation: torso as models/torso.h, heads
// orthogonal (gain sqrt(2) hidden, 1 output) with zero biases, LSTM LibTorch's
// default.
//
// Previous action: int64 indices; an index outside [0, A) (use -1 at an
// episode's first step) gives an all-zero one-hot. Without prev_action_reward
// the prev_action and prev_reward arguments are ignored and may be undefined.
//
// unroll() runs a whole stored sequence: the torso and heads on all T x B
// steps at once, the LSTM over all T steps in one lstm_sequence call
// (models/sequence_lstm.h), reset_t = 1 zeroing the state before step t (an
// episode starts there). step() is one step of the same computation: T calls
// of step() equal one unroll() with no resets (within float rounding).
//
// The target network is a copy: clone_net() makes an independent deep copy,
// copy_weights_from() refreshes an existing one in place.
//
// Errors: construction throws std::invalid_argument for an action space that
// is not Discrete, an observation that is not a shaped box, negative sizes, or
// a torso that does not fit the observation (naming them); step/unroll throw
// std::invalid_argument when a shape does not match (naming the argument, the
// expected and the received shape).
//
// Thread-safety: as any torch::nn::Module: concurrent forward passes are safe
// while nobody writes the parameters.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "envs/spec.h"
#include "models/model_spec.h"
#include "models/torso.h"

namespace moonseed::models {

struct QNetSpec {
  std::vector<LayerSpec> torso;    // models/torso.h layer list (empty = the flattened observation)
  int64_t lstm = 0;                // LSTM hidden size; 0 = feed-forward (no recurrent state)
  int64_t head_hidden = 512;       // hidden units of each dueling stream (0 = linear heads)
  bool dueling = true;             // false: a plain Q head
  bool prev_action_reward = true;  // feed one-hot a_{t-1} and r_{t-1} to the core
};

// R2D2's Atari network: the nature_cnn torso (ending in linear 512), LSTM 512,
// dueling streams of 512.
QNetSpec r2d2_atari_spec();

// The QNet a model spec declares: its layers (an mlp, a preset or the
// declared list), whose final lstm(n), if any, becomes the core; the heads as
// QNetSpec's defaults (engine/r2d2 sets them from the r2d2 section). Throws std::invalid_argument for an lstm that is not
// last or an unknown kind (models/torso.h split_recurrent, model_layers).
QNetSpec qnet_spec(const ModelSpec& model);

class QNetImpl;
// Declared ahead of QNetImpl, whose clone_net() returns one.
TORCH_MODULE(QNet);

class QNetImpl : public torch::nn::Module {
 public:
  struct State {
    torch::Tensor h, c;  // [B, lstm] each; undefined when lstm == 0
  };

  // One step's dueling streams, for inspection (dueling nets only).
  struct Streams {
    torch::Tensor value;      // [B]
    torch::Tensor advantage;  // [B, A], before centring
    torch::Tensor q;          // [B, A] = value + advantage - mean_a advantage
    State state;
  };

  QNetImpl(const QNetSpec& spec, const envs::EnvSpec& env_spec);

  // Zeros on the module's device; empty when lstm == 0.
  State initial_state(int64_t batch) const;

  // obs [B, obs...] (the observation's dtype), prev_action [B] int64, prev_reward [B] float,
  // state as initial_state(B) -> q [B, A] and the next state.
  std::pair<torch::Tensor, State> step(const torch::Tensor& obs, const torch::Tensor& prev_action,
                                       const torch::Tensor& prev_reward, const State& state);

  // obs [T, B, obs...], prev_action [T, B], prev_reward [T, B], reset [T, B] float
  // (1 = zero the state before step t) -> q [T, B, A] and the state after step T-1.
  std::pair<torch::Tensor, State> unroll(const torch::Tensor& obs, const torch::Tensor& prev_action,
                                         const torch::Tensor& prev_reward, const torch::Tensor& reset,
                                         const State& state0);

  // As step(), also returning the dueling streams. Throws std::logic_error on a non-dueling net.
  Streams forward_streams(const torch::Tensor& obs, const torch::Tensor& prev_action,
                          const torch::Tensor& prev_reward, const State& state);

  int64_t state_size() const { return spec_.lstm; }
  int64_t num_actions() const { return num_actions_; }
  const QNetSpec& spec() const { return spec_; }

  // A deep copy with the same parameters and buffers, on the same device and in
  // the same train/eval mode, sharing no storage with this one.
  QNet clone_net() const;
  // Copies `source`'s parameters and buffers into this net in place (tensors held
  // elsewhere, e.g. by an optimizer, stay valid). Throws std::invalid_argument
  // when the two nets' parameter names or shapes differ.
  void copy_weights_from(const QNetImpl& source);

 private:
  // Flattened [N, obs...] -> [N, core input] features.
  torch::Tensor embed(const torch::Tensor& obs, const torch::Tensor& prev_action,
                      const torch::Tensor& prev_reward);
  Streams heads(const torch::Tensor& core_out);
  Streams run_step(const char* function, const torch::Tensor& obs, const torch::Tensor& prev_action,
                   const torch::Tensor& prev_reward, const State& state);
  // obs must be [leading dims..., observation shape...]; leading is 1 (B) or 2 (T, B).
  void check_obs(const char* function, const torch::Tensor& obs, int64_t leading) const;
  void check_state(const char* function, const State& state, int64_t batch) const;

  QNetSpec spec_;
  envs::EnvSpec env_spec_;
  std::vector<int64_t> obs_shape_;
  bool uint8_obs_ = false;
  double uint8_scale_ = 1.0 / 255.0;  // uint8_obs_scale of the observation space
  int64_t num_actions_ = 0;
  Torso torso_{nullptr};  // null when spec_.torso is empty
  torch::nn::LSTMCell lstm_{nullptr};
  torch::nn::Sequential value_head_{nullptr};      // dueling only
  torch::nn::Sequential advantage_head_{nullptr};  // dueling: A(x, a); plain: Q(x, a)
};

}  // namespace moonseed::models
