// What the learner and its agents report, as plain values (no LibTorch, so
// that the CLI and tools that print them stay light): the run's counters, a
// training step, a warm start, the learner's statistics and evaluations.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "engine/learner/experience_recorder.h"

namespace moonseed::engine {

// The counters a checkpoint keeps.
struct Counters {
  int64_t optimizer_steps = 0;  // also the policy version
  int64_t frames = 0;           // valid env steps trained on
  int64_t episodes = 0;
  double elapsed_s = 0;         // training wall time, summed over resumes
};

// One training step, as LearnerStats reports it.
struct TrainReport {
  bool applied = false;     // false: the step was dropped (non-finite gradient norm)
  int64_t frames = 0;       // valid env steps the step trained on
  double loss_total = 0;
  double grad_norm = 0;
  // V-trace
  double loss_policy = 0, loss_baseline = 0, loss_entropy = 0, mean_rho = 0, policy_lag = 0;
  // R2D2
  double mean_q = 0, mean_priority = 0;
};

// What a warm start did (Agent::warm_start, Learner::warm_start).
struct WarmStartReport {
  int64_t steps = 0;      // V-trace: training steps taken on the log's unrolls
  int64_t unrolls = 0;    // unrolls read from the log (V-trace: counting every pass)
  int64_t sequences = 0;  // R2D2: sequences in the replay afterwards
  double loss_first = 0, loss_last = 0;  // V-trace: total loss of the first and the latest step
  double bc_first = 0, bc_last = 0;      // ... and its behaviour-cloning term
};

struct AgentStats {
  int64_t queue_size = 0;   // V-trace: unrolls in the FIFO; R2D2: sequences waiting for insertion
  int64_t replay_size = 0;  // R2D2: sequences in the replay
  int64_t explored_actions = 0;  // R2D2: random (epsilon) actions so far
  double replay_seconds = 0;     // R2D2: training-thread time in the replay ...
  double network_seconds = 0;    // ... and in the nets
};

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

}  // namespace moonseed::engine
