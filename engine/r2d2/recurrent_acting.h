// RecurrentActing: R2D2's acting on the learner's inference thread. It keeps
// every env slot's LSTM state between its steps and picks actions
// epsilon-greedily, each slot with its own epsilon (Ape-X: engine/r2d2/r2d2.h
// ape_x_epsilon; evaluation slots a small fixed one).
//
// Per batch: gather the slots' states, zero those whose observation starts an
// episode (reset), QNet::step on the batch, scatter the new states back, then
// for each slot a uniformly random action with probability epsilon, else the
// greedy one. The state each slot was acted on with is returned, so the
// SequenceRecorder can store it as a sequence's start state.
//
// States live on the net's device ([slots, lstm] h and c); nothing is kept for
// a feed-forward net (lstm 0).
// Errors: Q-values that are not finite are NonFiniteOutputs (engine/learner/agent.h),
// thrown before any slot's state changes; a slot or epsilon out of range, or inputs whose sizes disagree, are
// std::invalid_argument naming them.
// Thread-safety: one thread (the inference thread); the caller holds its
// weights lock (shared) around act() as for any forward pass.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include <torch/torch.h>

#include "engine/learner/agent.h"
#include "models/q_net.h"

namespace moonseed::engine {

struct ActingDecision {
  torch::Tensor actions;  // [n] int64, CPU
  torch::Tensor q;        // [n, A] the net's values, CPU float
  torch::Tensor h, c;     // [n, lstm] CPU float: the state each slot was acted on with (after a reset)
  int64_t explored = 0;   // actions drawn at random
  // [n] log mu(a|x) of the epsilon-greedy policy that chose each action:
  // log(epsilon / A + (1 - epsilon) [a is the greedy action]).
  std::vector<float> behaviour_logp;
};

class RecurrentActing {
 public:
  // `epsilons` has one value in [0, 1] per slot. `device`: where the states live
  // (the net's device).
  RecurrentActing(std::vector<double> epsilons, int64_t lstm, torch::Device device, uint64_t seed);

  int num_slots() const { return static_cast<int>(epsilons_.size()); }
  double epsilon(int slot) const;
  void set_epsilon(int slot, double epsilon);

  // slots [n] (each once), obs [n, obs...] on the device, prev_action [n] int64,
  // prev_reward [n] float, reset [n] bool/uint8 (1: the observation starts an episode).
  ActingDecision act(models::QNetImpl& net, const std::vector<int64_t>& slots, const torch::Tensor& obs,
                     const torch::Tensor& prev_action, const torch::Tensor& prev_reward,
                     const torch::Tensor& reset);

  // Zeros a slot's state (its actor went away).
  void reset_slot(int slot);

 private:
  void check_slot(int64_t slot, const char* what) const;

  std::vector<double> epsilons_;
  int64_t lstm_;
  torch::Device device_;
  torch::Tensor h_, c_;  // [slots, lstm] on device_
  std::mt19937_64 rng_;
};

}  // namespace moonseed::engine
