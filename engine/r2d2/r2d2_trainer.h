// R2d2Trainer: one R2D2 learning step (Kapturowski et al. 2019;
// docs/r2d2-design.md) on a batch of stored sequences, and the priorities of new ones.
//
// A sequence (engine/replay/sequence_replay.h) holds L = burn_in + trace steps in the
// columns r2d2_step_columns() names, time-major [L, B, ...], and the recurrent
// state at its first step (r2d2_start_columns(): "h", "c", absent for a
// feed-forward net). Step t holds (engine/r2d2/r2d2.h's convention):
//   obs            x_t
//   action         a_t (int64), the action taken at x_t
//   reward         r_t, what a_t produced
//   terminated     a_t ended the episode in a terminal state (no bootstrap)
//   truncated      a_t ended it by a time limit (bootstrap from x_{t+1})
//   valid          0 where x_t is a final observation: no action was taken
//   reset          1 where x_t starts an episode: the state is zeroed before t
//   prev_action    a_{t-1}, or -1 at an episode's first step
//   prev_reward    r_{t-1}, or 0 at an episode's first step
// Flags are uint8 in storage and float in the math.
//
// learn(batch):
//   1. burn-in: the online and the target net each unroll the first burn_in
//      steps from the stored state, without gradient; the stored state is
//      only read (the replay's copy never changes);
//   2. both nets unroll the trace from there; the online net with gradient;
//   3. double-Q bootstrap: bootstrap_q_s = Q_target(x_s, argmax_a Q_online(x_s, a));
//      n-step targets h(y_t) over the trace (engine/r2d2/r2d2.h n_step_targets);
//   4. loss = mean_b w_b l_b with the batch's importance weights; backward;
//      clip the gradient norm; new priorities eta max|delta| + (1 - eta) mean|delta|.
// apply() then makes the optimizer step (the caller holds its weights lock
// around it, as the V-trace learner does) and copies online -> target every
// target_period steps. Splitting learn() from apply() keeps the weights lock
// off the forward and backward passes.
//
// priorities(batch) runs steps 1 to 3 and the priorities without gradient:
// the learner's nets' priorities for new sequences (r2d2.insert_priorities =
// "learner"). acting_priorities() computes them instead from the Q-values the
// acting net gave at each step (the default, "acting": R2D2's and Ape-X's
// actors compute a new sequence's priority, with their own copy of the net):
// bootstrap_q_s = max_a Q_act(x_s, a), q_taken_t = Q_act(x_t, a_t), the same
// n-step targets and priorities over the trace, and no forward pass at all.
//
// Errors: a batch without a needed column or of the wrong length is
// std::invalid_argument naming it. A non-finite gradient norm makes learn()
// return skipped = true and apply() a no-op: the weights never see it.
// Thread-safety: one thread (the training thread) calls learn/apply/
// priorities; the online net may be read by others under the caller's lock.
#pragma once

#include <cstdint>
#include <memory>
#include <functional>
#include <limits>
#include <vector>

#include <torch/torch.h>

#include "engine/r2d2/r2d2.h"
#include "engine/replay/sequence_replay.h"
#include "envs/spec.h"
#include "models/q_net.h"

namespace moonseed::engine {

struct R2d2TrainerConfig {
  int64_t burn_in = 40;
  int64_t trace = 80;
  NStepParams n_step;            // n = 5, gamma = 0.997, eps = 1e-3
  double eta = 0.9;              // priority: eta max + (1 - eta) mean of |delta|
  int64_t target_period = 2500;  // optimizer steps between target copies; >= 1
  double max_grad_norm = 40;     // 0: no clipping
};

// Throws std::invalid_argument naming the field: burn_in >= 0, trace >= 2,
// target_period >= 1, eta in [0, 1], max_grad_norm >= 0, n_step as n_step_targets.
void validate(const R2d2TrainerConfig& config);

// The replay columns a sequence needs for `env` (see above).
std::vector<ColumnSpec> r2d2_step_columns(const envs::EnvSpec& env);
// "h" and "c" of size `lstm`; none when lstm == 0.
std::vector<ColumnSpec> r2d2_start_columns(int64_t lstm);

// What the acting net gave at one recorded step and what its action produced:
// the inputs of acting_priorities(). Q-values are h-space, as the net outputs
// them; NaN where no net acted (a warm start's logged steps).
struct ActingStep {
  float q_taken = std::numeric_limits<float>::quiet_NaN();   // Q_act(x_t, a_t)
  float q_greedy = std::numeric_limits<float>::quiet_NaN();  // max_a Q_act(x_t, a)
  float reward = 0;
  uint8_t terminated = 0;
  uint8_t truncated = 0;
  uint8_t valid = 0;
};

// True when every step of `steps` has finite Q-values.
bool has_acting_values(const std::vector<ActingStep>& steps);

struct R2d2StepStats {
  double loss = 0;
  double grad_norm = 0;
  double mean_q = 0;         // of the taken actions over the trace's masked steps
  double mean_priority = 0;  // of the new priorities
  bool skipped = false;      // non-finite gradient: nothing will be applied
};

class R2d2Trainer {
 public:
  // `online` is trained; the target starts as its copy. `optimizer` is built
  // over online->parameters(). Both nets live on `device`. Throws
  // std::invalid_argument for a config validate() rejects.
  R2d2Trainer(const R2d2TrainerConfig& config, models::QNet online, torch::optim::Optimizer& optimizer,
              torch::Device device);

  const R2d2TrainerConfig& config() const { return config_; }
  models::QNet& online() { return online_; }
  models::QNet& target() { return target_; }
  int64_t steps() const { return steps_; }  // optimizer steps applied

  // Forward, loss, backward and clipping on a sampled batch; `priorities` gets
  // one new priority per sequence (for SequenceReplay::update_priorities).
  R2d2StepStats learn(const SampledBatch& batch, std::vector<double>* priorities);
  // The optimizer step of the last learn(), and the target copy on its period.
  void apply();
  // A learner group's step for which this rank has no batch: zero gradients
  // through the gradient hook, then clipping, as learn() does; apply() follows.
  R2d2StepStats learn_without_batch();

  // Priorities of sequences not trained on yet, one per sequence, no gradient.
  std::vector<double> priorities(const SequenceBatch& batch);
  // The same from the acting net's values: one vector of burn_in + trace
  // steps per sequence, oldest first. Throws std::invalid_argument for a
  // sequence of another length.
  std::vector<double> acting_priorities(const std::vector<const std::vector<ActingStep>*>& sequences) const;

  // Replaces the step count (a resumed run) so the target period keeps its phase.
  void set_steps(int64_t steps) { steps_ = steps; }
  // Between steps: the discount of the targets and the gradient-norm clip
  // (hot-reloadable). Throws std::invalid_argument as validate() does.
  void set_hot(double gamma, double max_grad_norm);
  // Before training: called in learn() after backward and before clipping
  // with the online net's parameters (a learner group averages their gradients).
  void set_gradient_hook(std::function<void(const std::vector<torch::Tensor>&)> hook) {
    gradient_hook_ = std::move(hook);
  }

 private:
  struct Forward {
    torch::Tensor q_taken;  // [T, B]
    torch::Tensor targets;  // [T, B]
    torch::Tensor mask;     // [T, B]
  };
  // Steps 1 to 3 above; q_taken carries a gradient when grad mode is on.
  Forward forward(const SequenceBatch& batch);

  R2d2TrainerConfig config_;
  models::QNet online_;
  models::QNet target_{nullptr};
  torch::optim::Optimizer& optimizer_;
  std::function<void(const std::vector<torch::Tensor>&)> gradient_hook_;
  torch::Device device_;
  std::vector<torch::Tensor> params_;
  bool pending_ = false;  // learn() left gradients for apply()
  int64_t steps_ = 0;
};

}  // namespace moonseed::engine
