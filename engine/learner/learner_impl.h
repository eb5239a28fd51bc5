// Learner::Impl: the state the learner's threads share (engine/learner/
// learner.cc runs the inference and training threads over it;
// learner_control.cc is the public Learner API that starts, stops, reads and
// saves it). Internal to moonseed_learner: nothing outside these two files
// includes it.
#pragma once

#include "engine/learner/learner.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <optional>
#include <thread>
#include <torch/torch.h>
#include "base/log.h"
#include "base/mutex.h"
#include "base/text.h"
#include "engine/config/actor_config.h"
#include "engine/config/config_problems.h"
#include "engine/config/schedule.h"
#include "engine/config/schema.h"
#include "engine/learner/actor_gateway.h"
#include "engine/learner/agent.h"
#include "engine/learner/agent_registry.h"
#include "engine/learner/episode_returns.h"
#include "engine/learner/evaluator.h"
#include "engine/learner/step_sync.h"
#include "engine/runtime/clock.h"
#include "engine/runtime/inference_batcher.h"
#include "envs/env.h"
#include "models/device.h"

namespace moonseed::engine {

struct Learner::Impl {
  Impl(const ExperimentConfig& config, std::string id, const envs::EnvSpec& env_spec)
      : cfg(config),
        run_id(std::move(id)),
        spec(env_spec),
        device(models::choose_device(config.inference.device)),
        agent(make_agent(config, env_spec, device)),
        train_cfg(config),
        batcher(config.inference.max_batch, std::chrono::microseconds(config.inference.deadline_us), clock,
                std::chrono::microseconds(config.inference.idle_spin_us)),
        gateway(config, run_id, env_spec, agent->unroll_length(), batcher, clock) {
    gateway.publish_boundary(0, encode_actor_config(actor_config_of(config)));
  }

  const ExperimentConfig cfg;
  const std::string run_id;
  const envs::EnvSpec spec;
  const torch::Device device;
  // Experience log (record_to). Declared before the agent, which hands it
  // unrolls until it is closed or destroyed.
  std::unique_ptr<ExperienceRecorder> recorder;
  // The algorithm (engine/learner/agent.h): nets, optimizer, and the path from acting
  // to learning. It guards its own weights; lock order: train_mu before them.
  const std::unique_ptr<Agent> agent;
  // Held for one whole training step; checkpoints take it. Lock order:
  // train_mu, then hot_mu, then the agent's own.
  base::Mutex train_mu ACQUIRED_BEFORE(hot_mu);
  ExperimentConfig train_cfg GUARDED_BY(train_mu);  // cfg with the newest hot fields

  SteadyClock clock;
  InferenceBatcher<StepRequest> batcher;
  ActorGateway gateway;
  std::thread inference_thread;
  std::thread training_thread;
  bool started = false;
  bool stopped = false;

  // Hot reload: set_hot_config -> the training thread, at its next step.
  base::Mutex hot_mu;
  std::optional<ExperimentConfig> pending_hot GUARDED_BY(hot_mu);
  std::atomic<bool> hot_pending{false};
  std::atomic<uint64_t> config_version{0};
  std::atomic<uint64_t> applied_config_version{0};

  // Pause (set_paused): the training thread waits between steps.
  mutable base::Mutex pause_mu;
  base::CondVar pause_cv;
  bool paused GUARDED_BY(pause_mu) = false;
  bool stopping GUARDED_BY(pause_mu) = false;
  void wait_while_paused() EXCLUDES(pause_mu) {
    base::MutexLock lock(pause_mu);
    while (paused && !stopping) pause_cv.wait(lock);
  }

  // set_frame_limit: the inference thread takes no batch while frames >=
  // frame_limit (> 0). The fast path reads two atomics; the wait shares
  // pause_mu and pause_cv, which set_frame_limit and stop() signal.
  std::atomic<int64_t> frame_limit{0};
  bool below_frame_limit() const {
    const int64_t limit = frame_limit.load(std::memory_order_relaxed);
    return limit <= 0 || frames.load(std::memory_order_relaxed) < limit;
  }
  // False once the learner stops.
  bool wait_below_frame_limit() EXCLUDES(pause_mu) {
    if (below_frame_limit()) return true;
    base::MutexLock lock(pause_mu);
    while (!below_frame_limit() && !stopping) pause_cv.wait(lock);
    return !stopping;
  }

  // Training time (LearnerStats::train_s): steady nanoseconds of the first
  // training batch and of stop() (-1 until then), plus the restored seconds.
  std::atomic<int64_t> first_batch_ns{-1};
  std::atomic<int64_t> stopped_ns{-1};
  double restored_train_s = 0;  // set by restore(), before the threads start
  static int64_t steady_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch()).count();
  }
  double train_seconds() const {
    const int64_t first = first_batch_ns.load();
    if (first < 0) return restored_train_s;
    const int64_t stopped = stopped_ns.load();
    const int64_t end = stopped >= 0 ? stopped : steady_ns();
    // A first batch taken while stop() ran adds nothing.
    return restored_train_s + static_cast<double>(std::max<int64_t>(0, end - first)) * 1e-9;
  }

  std::atomic<int64_t> frames{0};
  std::atomic<int64_t> episodes{0};
  std::atomic<int64_t> optimizer_steps{0};
  std::atomic<int64_t> trained_frames{0};
  std::atomic<int64_t> inference_envs{0};
  std::atomic<int64_t> inference_batches{0};
  std::atomic<int64_t> eval_episodes{0};
  int64_t skipped_steps = 0;  // training thread only: non-finite gradients

  // The last training step, as stats() reports it.
  struct LastStep {
    double loss_total = 0, grad_norm = 0, learning_rate = 0;
    Metrics metrics;
  };
  mutable base::Mutex stats_mu;
  EpisodeMeans episode_means GUARDED_BY(stats_mu);
  std::atomic<bool> reward_shaping{!cfg.reward_shaping.source.empty()};
  LastStep last_step GUARDED_BY(stats_mu);
  const std::vector<bool> eval_slot = evaluation_slots(cfg);

  // Set once when the learner cannot go on (the model diverged); the run stops.
  std::string failure GUARDED_BY(stats_mu);
  void fail(const std::string& why) EXCLUDES(stats_mu);
  bool failed() const EXCLUDES(stats_mu) {
    base::MutexLock lock(stats_mu);
    return !failure.empty();
  }

  // A learner group (join_group): set before start, read by the training thread.
  StepSync* sync = nullptr;
  std::function<ExperimentConfig(uint64_t)> config_of_version;
  std::function<void(uint64_t, const ExperimentConfig&)> publish_config;
  std::atomic<bool> group_stop_requested{false};
  std::atomic<bool> group_stopped{false};
  std::atomic<int64_t> group_frames_at_round{0};  // agreed at the last round
  std::atomic<int64_t> frames_at_round{0};        // this rank's frames proposed then
  std::string group_failure GUARDED_BY(stats_mu);  // why the group's rounds failed ("" while they work)
  std::atomic<int64_t> weights_checked_step{0};
  std::atomic<int64_t> steps_without_batch{0};  // group steps this rank took part in with no batch of its own
  std::atomic<uint64_t> weights_hash{0};
  int64_t group_frames_now() const {
    return group_frames_at_round.load() + std::max<int64_t>(0, frames.load() - frames_at_round.load());
  }
  // Group checkpoints (docs/distributed-design.md "Checkpoints"). Every rank
  // writes its part of step S at the round the group agrees to checkpoint (and
  // at its last round); rank 0's training thread then writes the model too,
  // for the save_checkpoint call waiting on `checkpoint_cv`.
  std::function<std::string(int64_t)> part_of_step;  // set before start (keep_rank_parts)
  std::function<void()> parts_saved;                  // after each part: the run prunes old ones
  int64_t part_step GUARDED_BY(train_mu) = -1;        // the step of this rank's newest part
  struct CheckpointRequest {
    std::function<std::string(int64_t)> path_of_step;
    double elapsed_s = 0;
    bool done = false;
    std::string path, error;
  };
  base::Mutex checkpoint_mu;
  base::CondVar checkpoint_cv;
  CheckpointRequest* checkpoint_request GUARDED_BY(checkpoint_mu) = nullptr;
  std::atomic<bool> checkpoint_wanted{false};
  // What a restore gives this learner to go on from: frames, episodes,
  // trained frames, evaluation episodes and training time (not the step).
  void take_counters(const Counters& c) {
    frames = c.frames;
    episodes = c.episodes;
    trained_frames = c.trained_frames;
    eval_episodes = c.eval_episodes;
    restored_train_s = c.train_s;
  }
  // The counters a checkpoint of now holds: the group's frames in a group
  // (rank 0's checkpoint is the group's), this rank's own with `own`.
  Counters counters_now(double elapsed_s, bool own) const;
  // This rank's part at the current step, unless it has one: false (logged)
  // when it could not be written.
  bool save_rank_part() REQUIRES(train_mu);
  // Rank 0: the model of the current step (after save_rank_part). Returns its path.
  std::string save_group_model(const std::function<std::string(int64_t)>& path_of_step, double elapsed_s)
      REQUIRES(train_mu);
  // The training thread at a checkpoint round: the parts, then rank 0 serves
  // the waiting save_checkpoint.
  void checkpoint_round() REQUIRES(train_mu) EXCLUDES(checkpoint_mu);

  void inference_loop();
  // Closes the connection of `r` with `reason` and forgets the partial
  // trajectories of its first `observed` envs.
  void drop_request(const StepRequest& r, uint32_t observed, const std::string& reason);
  // The agent's actions for `slots` (rows of `obs`, the requests' envs in
  // order). Requests whose observations make the model's outputs non-finite
  // are refused and removed (with their slots), the rest acted on again.
  // nullopt when the model itself diverged (fail() has said so).
  std::optional<torch::Tensor> act_on(std::vector<StepRequest>& requests, std::vector<int64_t>& slots,
                                      torch::Tensor obs);
  void count_episodes(const std::vector<EpisodeResult>& finished) EXCLUDES(stats_mu);
  void training_loop() EXCLUDES(train_mu, stats_mu);
  // training_loop of a rank of a learner group: one round with the others per step.
  void group_training_loop() EXCLUDES(train_mu, stats_mu);
  // One step on the agent's batch, with train_cfg at `frames` (schedules, lr
  // decay); false when the agent skipped it (a non-finite gradient).
  bool train_one_step(int64_t frames) REQUIRES(train_mu) EXCLUDES(stats_mu);
  // A group's step for which this rank has no batch (Agent::train_without_batch).
  bool train_without_batch(int64_t frames) REQUIRES(train_mu);
  void take_hot_config() REQUIRES(train_mu) EXCLUDES(hot_mu);
};

}  // namespace moonseed::engine
