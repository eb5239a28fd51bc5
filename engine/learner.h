// The learner: serves inference to every connected actor, keeps each env's
// partial unroll, and trains the one model with V-trace or R2D2 (the agent,
// engine/agent.h, is chosen by config.algo).
//
// Threads (docs/architecture.md): rpc io thread(s) call the ActorService
// methods; one inference thread batches, runs the policy, replies and hands
// each step to the agent (V-trace: unrolls, collated by the prefetcher;
// R2D2: sequences into the replay); one training thread runs the loss and the
// optimizer. The model exists once: inference reads it under the agent's
// weights lock held shared, the optimizer step holds it exclusively, so
// inference always sees the newest weights.
//
// Lifetime: construct, optionally restore(), start(), ..., stop(). The rpc
// server must be stopped before the Learner is destroyed.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <thread>
#include <vector>

#include "engine/agent.h"
#include "engine/checkpoint.h"
#include "engine/config.h"
#include "engine/experience_recorder.h"
#include "envs/spec.h"
#include "rpc/service.h"

namespace moonseed::engine {

struct LearnerStats {
  int64_t frames = 0;            // env steps received (resets excluded)
  int64_t episodes = 0;
  int64_t optimizer_steps = 0;
  int64_t trained_frames = 0;    // valid steps consumed by training
  double return_mean = 0;        // over the last 100 episodes; NaN before the first
  double length_mean = 0;        // episode length over the same episodes
  // Evaluation envs (topology.eval_envs_per_actor), not counted above.
  int64_t eval_episodes = 0;
  double eval_return_mean = 0;   // over their last 100 episodes; NaN before the first
  int actors_connected = 0;
  int64_t queue_size = 0;        // V-trace: unrolls waiting for training; R2D2: sequences waiting for insertion
  int64_t inference_batches = 0;
  double mean_batch_envs = 0;    // envs per inference batch since start
  // Of the last training step:
  double loss_total = 0, loss_policy = 0, loss_baseline = 0, loss_entropy = 0;
  double grad_norm = 0, mean_rho = 0, learning_rate = 0, policy_lag = 0;
  double entropy_cost = 0;
  // R2D2 (algo = "r2d2"): of the last training step, and the replay now.
  double mean_q = 0, mean_priority = 0;
  int64_t replay_size = 0;        // sequences in the replay
  int64_t explored_actions = 0;   // epsilon-random actions so far
  double replay_seconds = 0;      // training-thread time in the replay (insert, sample, priorities)
  double network_seconds = 0;     // ... and in the nets (insertion priorities, learning steps)
  // Hot reload: the newest version given to set_hot_config, and the one the
  // training thread has applied (they differ until its next step).
  uint64_t config_version = 0;
  uint64_t applied_config_version = 0;
  bool paused = false;
  // Experience recording (record_to): absent when the run does not record.
  std::optional<RecorderStats> record;
};

// Episodes played by Learner::evaluate.
struct Evaluation {
  std::vector<double> returns;
  std::vector<int64_t> lengths;
  std::vector<bool> truncated;  // ended by a time limit (or max_steps), not a terminal state
};

class Learner : public rpc::ActorService {
 public:
  // Builds the model on the configured device. Throws std::invalid_argument for
  // an env id or model config that cannot be built.
  Learner(const ExperimentConfig& config, std::string run_id);
  ~Learner() override;
  Learner(const Learner&) = delete;
  Learner& operator=(const Learner&) = delete;

  const envs::EnvSpec& env_spec() const { return spec_; }

  // Run-to-completion (inference.io_threads = 0): the inference thread calls
  // `pump` to do the socket work that feeds it instead of sleeping, and
  // `wake` interrupts a waiting pump. Only before start().
  void set_io_pump(std::function<void(std::chrono::nanoseconds)> pump, std::function<void()> wake);

  // Actors must present this token in their Hello (empty: no check). Only
  // before start().
  void set_auth_token(std::string token);

  // Records every trajectory into the experience log at `directory`
  // (config.record; engine/experience_recorder.h), continuing the episode ids
  // of a log already there. A directory that cannot be used turns recording
  // off (stats().record->error) and training goes on. Only before start().
  void record_to(const std::string& directory);

  // Starts from the experience log config.warm_start.log (Agent::warm_start:
  // V-trace trains on its unrolls, R2D2 pre-fills its replay), calling
  // `progress` after each step. Only before start(). Throws
  // std::invalid_argument for a log that cannot be read or does not fit the
  // env (naming the log and the column).
  WarmStartReport warm_start(const std::function<void(const WarmStartReport&)>& progress = {});

  // Loads model, optimizer and counters. Only before start().
  Counters restore(const std::string& checkpoint_path);
  void start();
  // Closes the queues, joins every thread. Idempotent. Actors still connected
  // get no more replies; the rpc server says Bye to them.
  void stop();

  // Hot reload (docs/experiments-design.md): the training thread takes the hot
  // fields of `config` at the top of its next step: vtrace.*, optimizer.lr,
  // optimizer.max_grad_norm, optimizer.lr_decay_frames and the schedules
  // (evaluated at every step against frames). Every other field must
  // equal the running config's: the caller refuses reloads that change
  // restart-only fields (scripts::changed_fields and the schema's reload
  // classes). Connected actors, and actors that connect later, are sent a
  // ConfigUpdate with `version` and the boundary fields (engine/actor_config.h:
  // reward shaping), which each group of envs takes at its next unroll boundary
  // and from then stamps on its StepBatches.
  // `version` must grow with each call. Thread-safe; any time after start().
  void set_hot_config(const ExperimentConfig& config, uint64_t version);

  // Pause: the training thread stops between two steps; the FIFO then fills
  // and holds the actors back (the same backpressure as a slow learner), so
  // acting stops soon after. Checkpoints and evaluate() still work. Thread-safe.
  void set_paused(bool paused);

  // Plays `episodes` episodes on fresh envs of the run's env (seeded seed,
  // seed+1, ...) in the calling thread, all envs stepped together with one
  // forward pass per step, with the newest weights: the most likely action
  // when `greedy`, else sampled. An episode ends at termination, at the env's
  // own time limit, or after `max_steps`. Thread-safe; inference and training
  // go on meanwhile. Throws std::invalid_argument for episodes outside [1, 10000].
  Evaluation evaluate(int episodes, uint64_t seed, bool greedy, int64_t max_steps = 100000);

  LearnerStats stats() const;

  // ActorNotices received since the last call, oldest first, each as
  // "actor N: text" (also printed to stderr when they arrive). At most the
  // newest 256 are kept between calls. Thread-safe.
  std::vector<std::string> take_notices();
  // Writes a checkpoint between two training steps (waits for the current one).
  // `elapsed_s` is stored in the counters.
  void save_checkpoint(const std::string& path, double elapsed_s);

  // rpc::ActorService, called on io threads.
  rpc::Admission on_hello(const rpc::Hello& hello) override;
  void on_connect(std::shared_ptr<rpc::ActorLink> link) override;
  void on_steps(const std::shared_ptr<rpc::ActorLink>& link, rpc::StepBatch&& batch) override;
  void on_disconnect(int32_t actor_id, const std::string& reason) override;
  void on_notice(const std::shared_ptr<rpc::ActorLink>& link, const rpc::ActorNotice& notice) override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  envs::EnvSpec spec_;
};

}  // namespace moonseed::engine
