// The resolved configuration of one experiment: what a Lua script produces
// after validation (scripts/) and what the learner runs. Plain values only.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "engine/config/schedule.h"
#include "engine/config/sections.h"
#include "envs/wrappers/wrapper_spec.h"
#include "models/model_spec.h"

namespace moonseed::engine {

struct EnvConfig {
  std::string id = "CartPole-v1";
  std::vector<std::pair<std::string, double>> options;  // passed to envs::make_env
  // The MJCF file MuJoCo/Model-v0 loads (envs::EnvFiles::model); "" = none. The loader makes a
  // relative path absolute against the script's directory.
  std::string model;
  // A C env plugin (envs::EnvFiles::plugin, docs/env-plugins.md) that serves `id`; "" = a
  // built-in env. Made absolute like `model`.
  std::string plugin;
  // A Python env factory, MODULE:FUNCTION (envs::EnvFiles::python, docs/python-actors.md); "" = not a
  // Python env. Python actors call it; the learner asks a Python child for the spec.
  std::string python;
  // (The four make envs::EnvFiles{model, plugin, python, python_path}.)
  // Where that module is found: the loader makes this the script's directory followed by the
  // script's env.python_path entries, absolute (':'-separated); "" without env.python.
  std::string python_path;
  // Wrappers the actors apply to every env, the first listed innermost (envs/wrappers/wrappers.h,
  // docs/env-wrappers.md); the learner builds its model for the wrapped spec.
  envs::WrapperList wrappers;
};

// The env as lines about actors name it: "plugin /abs/libcatch.so (env Catch-v0)", "Python env
// my_envs:make_maze (env Maze-v0)" or "env CartPole-v1" (engine/config/values.cc).
std::string env_text(const EnvConfig& env);

struct OptimizerConfig {
  std::string kind = "adam";   // "adam" | "rmsprop"
  double lr = 6e-4;
  double eps = 1e-8;           // Adam eps; RMSProp eps
  double rmsprop_alpha = 0.99;
  double rmsprop_momentum = 0.0;
  double max_grad_norm = 40.0; // 0 disables clipping
  double lr_decay_frames = 0;  // linear decay to 0 over this many frames, 0 = constant
};

struct TopologyConfig {
  int actors = 2;
  int envs_per_actor = 32;
  int groups_per_actor = 2;
  int eval_envs_per_actor = 0;     // the last k envs of each actor only evaluate (never trained on, not recorded)
  int local_actors = -1;           // actor processes `moonseed run` starts itself; -1 = all of them
  std::string transport = "unix";  // "unix" | "tcp"
  std::string listen;              // "" = choose (unix: RUN_DIR/learner.sock; tcp: 127.0.0.1:0)
  double actor_timeout_s = 30;     // an actor silent this long (or 20 of its step times) is hung; 0 = never
  // A local actor slot that keeps dying (cli/engine/local_actors.h RestartPolicy): this many deaths within
  // actor_death_window_s park it (0 = never); the first half restart at once, the rest back off
  // 1 s doubling to actor_max_backoff_s.
  int actor_deaths_to_park = 10;
  double actor_death_window_s = 600;
  double actor_max_backoff_s = 30;
  int actor_memory_mb = 0;          // a local actor holding this much is killed for memory; 0 = no limit
  // A learner group (docs/distributed.md): `learners` ranks train one model data-parallel.
  int learners = 1;
  int rank = 0;                    // this process's rank (--rank)
  std::string rendezvous;          // "" = a group on this host; "tcp:HOST:PORT" = rank 0 hosts c10d's TCPStore there
  double group_timeout_s = 60;     // a rank silent this long stops the group, named
  int weights_check_every = 100;   // optimizer steps between weight-hash comparisons; 0 = never
};

struct InferenceConfig {
  int max_batch = 64;        // envs per forward pass
  int deadline_us = 1000;    // a batch runs when its oldest request is this old
  int idle_spin_us = 0;      // the inference thread polls this long for work before it sleeps
  int io_threads = 0;        // socket threads; 0 = the inference thread does the socket work itself
  std::string device = "auto";  // "auto" | "cpu" | "cuda"
  // A NaN or infinite observation element (float spaces) or reward from an
  // actor: "refuse" closes that actor's connection, "replace" uses 0 and counts it.
  std::string nonfinite = "refuse";
};

struct LearnerConfig {
  int batch = 32;            // unrolls per training step
  int unroll = 20;           // T: steps per unroll (T+1 stored, overlap 1)
  int queue_capacity = 256;  // unrolls in the FIFO before actors are held back
  int torch_threads = 1;     // intra-op threads of the training thread
};

struct StopConfig {
  int64_t frames = 0;        // 0 = no limit
  double seconds = 0;        // seconds of training (train_time_s); 0 = no limit
  double wall_seconds = 0;   // seconds of the run's wall time (time_s), data or not; 0 = no limit
  double return_mean = 0;    // stop once mean return over the last 100 episodes reaches it; 0 = off
  double eval_return_mean = 0;  // the same over evaluation envs' episodes (topology.eval_envs_per_actor); 0 = off
  // The two rules above compare the env's own return (before reward shaping);
  // true: the shaped return (shaped_return_mean, eval_shaped_return_mean).
  bool on_shaped_return = false;
  // Episodes the final weights play when the run stops by its own rule (not a
  // signal), in the learner's process, as its evaluation envs act; their mean
  // is printed and goes into the stop row (final_eval_return_mean). 0 = none.
  int final_eval_episodes = 10;
};

struct LogConfig {
  double interval_s = 1.0;   // progress line and metrics.jsonl cadence
  bool progress = true;      // print the live progress line
  bool tensorboard = true;   // TensorBoard event files in RUN_DIR (docs/tensorboard.md); restart-only
};

struct CheckpointConfig {
  double interval_s = 300;   // 0 = only at the end
  int keep = 3;              // newest checkpoints kept
};

// Experience recording (docs/experience-log.md): the learner writes every
// unroll it trains on into an experience log. Restart-only.
struct RecordConfig {
  bool enabled = false;
  std::string dir;                          // "" = RUN_DIR/experience; relative paths: to the run directory
  std::string full_queue = "backpressure";  // "backpressure" | "drop": when the disk cannot keep up
  int queue_mb = 256;                       // unrolls waiting to be written, at most
  int chunk_kb = 1024;                      // uncompressed bytes per chunk
  int segment_mb = 256;                     // a segment file is published at this size ...
  double segment_age_s = 600;               // ... or this age; 0 = no age limit
  double sync_interval_s = 1;               // written data is fsynced at least this often ...
  int sync_mb = 16;                         // ... and after this many bytes
  int compress_threads = 1;
  std::string codec = "lz4";                // "lz4" | "none"
  int lz4_acceleration = 1;                 // LZ4 speed/ratio trade: higher compresses faster, less
  bool delta = true;                        // uint8 observations stored XORed with the step before
};

// Warm start (docs/experience-log.md "Warm start"): a run that begins from an
// experience log. Restart-only; not applied on --resume.
struct WarmStartConfig {
  std::string log;        // RUN_DIR, log directory or segment file; "" = no warm start
  int steps = 1000;       // V-trace: training steps on the log's unrolls before acting starts
  double bc_cost = 1.0;   // V-trace: weight of behaviour cloning (-log pi(a|x)) added to the loss then
};

// Reward shaping (docs/reward-shaping.md): a Lua function the actors call once
// per group of envs per step, kept as its exact text so the engine can send it
// to actor processes without Lua. Reload class: boundary.
struct RewardShapingConfig {
  std::string source;      // "function(n, reward, ...) ... end"; "" = no shaping
  std::string chunk_name;  // "@path" of the file it was written in: errors name that file
  int first_line = 1;      // line of its `function` keyword in that file

  bool operator==(const RewardShapingConfig& o) const {
    return source == o.source && chunk_name == o.chunk_name && first_line == o.first_line;
  }
  bool operator!=(const RewardShapingConfig& o) const { return !(*this == o); }
};

struct DashboardConfig {
  // "HOST:PORT" the run's dashboard serves on (docs/dashboard.md); port 0 = a free one;
  // "" = no dashboard. Beyond loopback only with the run's auth token. Restart-only.
  std::string listen = "127.0.0.1:0";
  // Host names, comma-separated, the dashboard answers to besides loopback ones
  // (its DNS-rebinding check, docs/security.md); "" = loopback only. Restart-only.
  std::string hosts;
};

struct ExperimentConfig {
  std::string name = "experiment";
  std::string algo = "vtrace";
  uint64_t seed = 1;
  std::string runs_dir = "runs";  // run directories are created under it
  bool group_access = false;      // the run's files are the owner's only (umask 077), else group-readable (027)
  EnvConfig env;
  models::ModelSpec model;
  // The algorithms' sections (engine/config/sections.h): config.section<R2d2Config>().r2d2_field.
  Sections sections;
  OptimizerConfig optimizer;
  TopologyConfig topology;
  InferenceConfig inference;
  LearnerConfig learner;
  StopConfig stop;
  LogConfig log;
  CheckpointConfig checkpoint;
  RecordConfig record;
  WarmStartConfig warm_start;
  DashboardConfig dashboard;
  // Fields that follow a schedule (engine/config/schedule.h), sorted by path; empty =
  // every field constant. Each such field also holds its value at x = 0.
  std::vector<ScheduledField> schedules;
  // Not a schema field (no FieldType holds a function): engine/config/schema.h
  // lists it as kRewardShapingPath.
  RewardShapingConfig reward_shaping;

  template <class S>
  const S& section() const {
    return sections.get<S>();
  }
  template <class S>
  S& section() {
    return sections.get<S>();
  }
};

}  // namespace moonseed::engine
