// What the learner and its agents report, as plain values (no LibTorch, so
// that the CLI and tools that print them stay light): the run's counters, a
// training step, a warm start, the learner's statistics and evaluations.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/learner/experience_recorder.h"

namespace moonseed::engine {

// The counters a checkpoint keeps, so that a resumed run's rows go on from
// where the checkpoint's left off.
struct Counters {
  int64_t optimizer_steps = 0;  // also the policy version
  int64_t frames = 0;           // env steps received (LearnerStats::frames)
  int64_t episodes = 0;
  double elapsed_s = 0;         // wall time since the run started, summed over resumes
  int64_t trained_frames = 0;   // valid env steps consumed by training
  int64_t eval_episodes = 0;    // evaluation envs' episodes
  double train_s = 0;           // training time (LearnerStats::train_s), summed over resumes
};

// A number an algorithm reports under its own name ("loss_policy", "mean_q"):
// LearnerStats, metrics.jsonl and `moonseed ctl status` carry it under that
// name, so neither the learner nor the CLI needs a field per algorithm.
struct Metric {
  std::string name;
  double value = 0;
};
using Metrics = std::vector<Metric>;

// The value of `name` in `metrics`; NaN when it is not there.
double metric_value(const Metrics& metrics, std::string_view name);

// One training step, as LearnerStats reports it.
struct TrainReport {
  bool applied = false;     // false: the step was dropped (non-finite gradient norm)
  int64_t frames = 0;       // valid env steps the step trained on
  double loss_total = 0;
  double grad_norm = 0;
  Metrics metrics;          // the algorithm's own (V-trace: loss_policy, ...; R2D2: mean_q, ...)
};

// What a warm start did (Agent::warm_start, Learner::warm_start).
struct WarmStartReport {
  // Training steps the warm start takes (V-trace: warm_start.steps); 0 when it
  // trains nothing but fills a replay (R2D2). Set from the first report on, so
  // a caller can say what is coming and print it without knowing the algorithm.
  int64_t steps_planned = 0;
  int64_t steps = 0;      // V-trace: training steps taken on the log's unrolls
  int64_t unrolls = 0;    // unrolls read from the log (V-trace: counting every pass)
  int64_t sequences = 0;  // R2D2: sequences in the replay afterwards
  double loss_first = 0, loss_last = 0;  // V-trace: total loss of the first and the latest step
  double bc_first = 0, bc_last = 0;      // ... and its behaviour-cloning term
};

// What an agent reports at any time (Agent::stats).
struct AgentStats {
  int64_t queue_size = 0;  // steps waiting between acting and learning (V-trace: unrolls
                           // in the FIFO; R2D2: sequences waiting for insertion)
  Metrics metrics;         // the algorithm's own (R2D2: replay_size, explored_actions, ...)
};

struct LearnerStats {
  int64_t frames = 0;            // env steps received (resets excluded)
  int64_t episodes = 0;
  int64_t optimizer_steps = 0;
  int64_t trained_frames = 0;    // valid steps consumed by training
  // Seconds of training: from the first training batch to now (or to stop()),
  // plus what the restored checkpoint held. What stop.seconds counts.
  double train_s = 0;
  // The env's own return (before reward shaping) over the last 100 episodes;
  // NaN before the first.
  double return_mean = 0;
  // The return of the rewards trained on (shaped) over the same episodes: the
  // same as return_mean without shaping.
  double shaped_return_mean = 0;
  double length_mean = 0;        // episode length over the same episodes
  // Evaluation envs (topology.eval_envs_per_actor), not counted above.
  int64_t eval_episodes = 0;
  double eval_return_mean = 0;   // env return over their last 100 episodes; NaN before the first
  double eval_shaped_return_mean = 0;
  // The config the learner was given last shapes rewards (reward_shaping is set).
  bool reward_shaping = false;
  int actors_connected = 0;
  int64_t auth_failures = 0;     // Hellos refused for a wrong auth token since start
  // Non-finite observation elements and rewards from actors replaced by 0
  // (inference.nonfinite = "replace").
  int64_t nonfinite_replaced = 0;
  // Why the learner stopped on its own ("" while it runs): the model's weights
  // or outputs went non-finite. Acting and training have stopped; checkpoints
  // are refused, so the last good one stays. The run stops with this reason.
  std::string failure;
  int64_t queue_size = 0;        // V-trace: unrolls waiting for training; R2D2: sequences waiting for insertion
  int64_t inference_batches = 0;
  double mean_batch_envs = 0;    // envs per inference batch since start
  // Of the last training step:
  double loss_total = 0, grad_norm = 0, learning_rate = 0;
  // The algorithm's own numbers: its last training step's, then its stats' now.
  Metrics agent_metrics;
  double metric(std::string_view name) const { return metric_value(agent_metrics, name); }
  // Hot reload: the newest version given to set_hot_config, and the one the
  // training thread has applied (they differ until its next step).
  uint64_t config_version = 0;
  uint64_t applied_config_version = 0;
  bool paused = false;
  // A learner group (Learner::join_group): the frames of every rank, as agreed at
  // the last training round plus this rank's since; the group has agreed to stop
  // (every rank's training has ended); the newest weights comparison.
  int64_t group_frames = 0;
  bool group_stopped = false;
  // Why the group could not go on (a rank died, hung, or its weights differ),
  // "" while it works. Training has stopped; checkpoints still work.
  std::string group_failure;
  int64_t weights_checked_step = 0;  // optimizer step of the newest comparison (0: none yet)
  int64_t steps_without_batch = 0;   // group steps this rank took with no batch of its own (zero gradients)
  uint64_t weights_hash = 0;         // the hash every rank had then
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
