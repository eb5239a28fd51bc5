// What `moonseed run` decides and reports on its ticks, as functions of plain
// values so that tests/cli checks them without a learner (and without
// LibTorch): the stop rules, the learner's counters as JSON (metrics.jsonl
// rows and `moonseed ctl status`), and saving a checkpoint then pruning.
//
// Pure functions, except checkpoint_and_prune, which writes the run directory;
// thread-safe as far as their arguments are.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "cli/engine/local_actors.h"
#include "engine/config/experiment_config.h"
#include "engine/learner/stats.h"
#include "engine/run/metrics_log.h"
#include "engine/run/run_directory.h"

namespace moonseed::cli {

// Why the run stops now, or "" to go on: the first of stop.frames (env
// frames received, s.frames), stop.seconds (seconds of training, s.train_s:
// from the first training batch, not from the start of the run: never, when
// no first batch forms), stop.wall_seconds (`wall_s`, the run's time_s: wall
// time from its start, whether data arrives or not), stop.return_mean (once 100 episodes have ended) and stop.eval_return_mean
// (once 100 evaluation episodes have). A rule at 0 is off. The return rules
// compare the env's own return (return_mean, eval_return_mean), the shaped
// one when stop.on_shaped_return. `stop` has its schedules applied at
// s.frames. The control loop checks them every kStopCheckPeriod_s seconds,
// whatever log.interval_s is.
std::string stop_reason(const engine::StopConfig& stop, const engine::LearnerStats& s, double wall_s = 0);
constexpr double kStopCheckPeriod_s = 0.05;

// Adds the learner's counters to `row`: frames, episodes, returns (the env's;
// shaped_return_mean too when s.reward_shaping), steps, training time
// (train_time_s), loss, learning rate, actors, queue, batching; the
// evaluation envs' episodes and return when `eval_envs` (topology.eval_envs_per_actor > 0); the
// algorithm's named metrics; the recorder's numbers when it records. Each
// caller adds its own fields around them: metrics.jsonl time_s, fps,
// actor_restarts; `status` the run's identity. Non-finite numbers are null.
void add_counters(engine::MetricsRow& row, const engine::LearnerStats& s, bool eval_envs);

// The final policy's evaluation (stop.final_eval_episodes) as the run's last
// lines say it: "final policy: return_mean 500 over 10 evaluation episodes
// (sampled; min 500, max 500)"; `policy` says how it acted: "sampled",
// "greedy", "epsilon 0.001".
std::string final_eval_text(const engine::Evaluation& e, const std::string& policy);
// Adds final_eval_return_mean and final_eval_episodes to `row` (the stop row).
void add_final_eval(engine::MetricsRow& row, const engine::Evaluation& e);

// One metrics.jsonl row of the run's counters (docs/metrics.md "Tick rows"): time_s, fps,
// add_counters, actor_restarts, the config version the training thread applied, and the local
// actor slots' deaths, backoffs and parks.
engine::MetricsRow counters_row(const engine::LearnerStats& s, const engine::ExperimentConfig& cfg, double elapsed,
                                double fps, int actor_restarts, const SlotCounts& slots);

// Writes one checkpoint: a function that saves the learner's state to a path.
using SaveCheckpoint = std::function<void(const std::string& path)>;

// Saves the checkpoint of optimizer step `step` into the run directory
// through `save`, then deletes all but the newest `keep` and what interrupted
// saves left (RunDirectory::prune_checkpoints). Returns its path.
// Throws what `save` or the pruning throws (nothing is pruned when saving
// fails, so a failed checkpoint never costs a good one); each caller decides
// how to report it.
std::string checkpoint_and_prune(const engine::RunDirectory& dir, int64_t step, int keep, const SaveCheckpoint& save);

// Writes one checkpoint whose step the saver reads itself, with training held
// (Learner::save_checkpoint): it asks `path_of_step` for the path of that step,
// saves there and returns the path. So the name and the content agree.
using SaveNumberedCheckpoint =
    std::function<std::string(const std::function<std::string(int64_t step)>& path_of_step)>;

// checkpoint_and_prune for a saver that decides the step.
std::string checkpoint_and_prune(const engine::RunDirectory& dir, int keep, const SaveNumberedCheckpoint& save);

}  // namespace moonseed::cli
