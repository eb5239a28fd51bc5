// R2d2Core: everything R2D2 adds to the learner, behind two entry points, one
// per learner thread (docs/r2d2-design.md):
//
//   inference thread   observe(slot, x_t, reward, flags) for each step of a batch,
//                      then act(slots, obs) -> actions. Keeps each slot's LSTM
//                      state and epsilon (RecurrentActing), records the steps
//                      into the replay (SequenceRecorder) and queues the
//                      sequences they complete. wait_for_room() is its
//                      backpressure: it blocks while the training thread is
//                      behind on inserting, or the rate limiter says acting is
//                      ahead of learning.
//   training thread    train_step(wait): inserts the queued sequences with
//                      their priorities (from the Q-values the acting net gave
//                      their steps, or with acting_priorities = false from the
//                      learner's nets now: R2d2Trainer), then, when the replay
//                      allows a sample of `batch`, one R2d2Trainer step, with
//                      the optimizer step under the weights lock, and the new
//                      priorities.
//
// The online net is the acting net; act() reads it under a shared lock and the
// optimizer step writes it under the exclusive one, so acting always sees
// whole weights. Training slot s of S explores with Ape-X's epsilon
// 0.4^(1 + 7 s / (S - 1)); evaluation slots use eval_epsilon and feed no replay.
//
// Errors: a config the parts refuse is std::invalid_argument at construction,
// naming the field. Thread-safety: as above: one inference thread, one
// training thread; stats() and close() from any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include <torch/torch.h>

#include "base/mutex.h"
#include "engine/config/experiment_config.h"
#include "engine/r2d2/r2d2_trainer.h"
#include "engine/runtime/rate_limiter.h"
#include "engine/r2d2/recurrent_acting.h"
#include "engine/r2d2/sequence_recorder.h"
#include "engine/replay/sequence_replay.h"
#include "envs/spec.h"
#include "models/q_net.h"

namespace moonseed::engine {

// The QNet an experiment declares: the model's layers (models::qnet_spec)
// with the heads of its r2d2 section. Throws std::invalid_argument as
// models::qnet_spec does.
models::QNetSpec r2d2_net_spec(const ExperimentConfig& config);

struct R2d2CoreConfig {
  R2d2TrainerConfig trainer;    // burn_in, trace, n-step, eta, target period, gradient clip
  SequenceReplayConfig replay;  // capacity, period, exponents, seed; sequence_length and
                                // max_streams are set from the trainer and the slots
  RateLimiterConfig limiter;    // samples per insert, minimum fill, error buffer
  int64_t batch = 64;           // sequences per learning step
  models::QNetSpec net;
  OptimizerConfig optimizer;    // kind, lr, eps (R2D2: Adam 1e-4, eps 1e-3)
  double epsilon_base = 0.4;    // Ape-X: base^(1 + alpha s / (S - 1))
  double epsilon_alpha = 7;
  // Evaluation slots: act with eval_epsilon, are never recorded; the Ape-X
  // epsilons spread over the other slots. Empty = none.
  std::vector<bool> eval_slots;
  double eval_epsilon = 1e-3;
  // New sequences' priorities: true = from the acting net's Q-values
  // (R2d2Trainer::acting_priorities, no forward pass); false = a forward pass
  // of the online and target nets (R2d2Trainer::priorities). A warm start's
  // sequences, which no net acted on, always take the second.
  bool acting_priorities = true;
  uint64_t seed = 0;
};

struct R2d2CoreStats {
  int64_t sequences_queued = 0;   // completed by the recorder
  int64_t sequences_inserted = 0;
  int64_t sequences_rejected = 0; // their blocks were overwritten before insertion
  int64_t replay_size = 0;
  int64_t learning_steps = 0;
  int64_t explored_actions = 0;
  // Training thread time: in the replay (gather, insert, sample, priority
  // updates) and in the nets (insertion priorities, learning steps).
  double replay_seconds = 0;
  double network_seconds = 0;
  R2d2StepStats last;             // of the newest learning step
};

class R2d2Core {
 public:
  R2d2Core(const R2d2CoreConfig& config, const envs::EnvSpec& env, int num_slots, torch::Device device);
  ~R2d2Core();
  R2d2Core(const R2d2Core&) = delete;
  R2d2Core& operator=(const R2d2Core&) = delete;

  // Inference thread.
  // env_reward: the env's own reward when `reward` was shaped (SequenceRecorder::observe).
  void observe(int slot, const uint8_t* obs, float reward, uint8_t flags, std::optional<float> env_reward = {});
  // obs [n, obs...] in the observation's dtype, one row per slot, each slot
  // observed just before. Returns the actions, [n] int64 on the CPU, and when
  // `behaviour_logp` is given, their log-probabilities under the
  // epsilon-greedy policy that chose them.
  torch::Tensor act(const std::vector<int64_t>& slots, const torch::Tensor& obs,
                    std::vector<float>* behaviour_logp = nullptr);
  void reset_slot(int slot);
  // New Ape-X parameters for the training slots (evaluation slots keep
  // eval_epsilon), from the next act(). Throws std::invalid_argument for a
  // base outside [0, 1] or a negative alpha.
  void set_exploration(double epsilon_base, double epsilon_alpha);
  void take_finished_episodes(std::vector<EpisodeResult>& out);
  // Waits up to `timeout` for room to act; false on timeout or after close().
  bool wait_for_room(std::chrono::milliseconds timeout);

  // Training thread: see above. Returns the step's stats, or nothing when no
  // sample was allowed within `wait` (or after close()).
  std::optional<R2d2StepStats> train_step(std::chrono::milliseconds wait);
  // train_step in two halves, for a caller that does more between them:
  // inserts the queued sequences, then waits up to `wait` for the replay to
  // allow a sample (false on timeout or after close()) ...
  bool ready_to_learn(std::chrono::milliseconds wait);
  // ... and one learning step, once ready_to_learn() said yes.
  R2d2StepStats learn();
  // A learner group's step without a batch of this rank's (R2d2Trainer::learn_without_batch).
  R2d2StepStats learn_without_batch();
  // Training thread, between steps: the learning rate of the next steps, and
  // the hot fields of the trainer (discount, gradient clip).
  void set_learning_rate(double lr);
  void set_hot(double gamma, double max_grad_norm);

  // Checkpoints (no training step in flight): the target net, the optimizer,
  // and the trainer's step count that sets the target copy's phase.
  models::QNet& target() { return trainer_->target(); }
  torch::optim::Optimizer& optimizer() { return *optimizer_; }
  void set_learning_steps(int64_t steps);

  // Warm start, before the threads start: one logged step of a training slot,
  // recorded as observe() + act() would with a zero recurrent state (burn-in
  // warms it up when the sequence is replayed) ...
  // Returns the sequences completed and not inserted yet.
  int64_t prefill(int slot, const uint8_t* obs, float reward, uint8_t flags, int64_t action);
  // ... and the sequences completed so far inserted with priorities from the
  // online net. Returns the sequences in the replay.
  int64_t insert_prefilled();

  // Wakes and stops every wait; later waits return at once.
  void close();

  R2d2CoreStats stats() const;
  models::QNet& online() { return trainer_->online(); }
  R2d2Trainer& trainer() { return *trainer_; }
  SequenceReplay& replay() { return *replay_; }
  base::SharedMutex& weights_mutex() { return weights_mu_; }

 private:
  void insert_queued();

  const R2d2CoreConfig config_;
  const torch::Device device_;
  std::unique_ptr<SequenceReplay> replay_;
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
  std::unique_ptr<R2d2Trainer> trainer_;
  RecurrentActing acting_;          // inference thread
  SequenceRecorder recorder_;       // inference thread
  base::SharedMutex weights_mu_;  // shared: act(); exclusive: the optimizer step (the parameters in place)

  mutable base::Mutex queue_mu_;
  base::CondVar queue_cv_;
  std::vector<RecordedSequence> queued_ GUARDED_BY(queue_mu_);
  bool closed_ GUARDED_BY(queue_mu_) = false;
  int64_t max_queued_ = 0;

  mutable base::Mutex stats_mu_;
  R2d2CoreStats stats_ GUARDED_BY(stats_mu_);
};

}  // namespace moonseed::engine
