// The learner: serves inference to every connected actor, keeps each env's
// partial unroll, and trains the one model with the algorithm config.algo
// names (engine/learner/agent_registry.h).
//
// It is a thread shell over small parts (docs/architecture.md):
//   - ActorGateway (actor_gateway.h): the rpc::ActorService the server calls:
//     admission, validation, actions on the wire, config updates, notices;
//   - the inference thread: batches requests (InferenceBatcher), runs the
//     agent's policy, replies, and hands each step to the agent;
//   - the training thread: the agent's training step under the newest hot
//     fields and schedules;
//   - play_episodes (evaluator.h) for evaluate().
// The model exists once, in the agent: inference reads it under the agent's
// weights lock held shared, the optimizer step holds it exclusively, so
// inference always sees the newest weights.
//
// Lifetime: construct, optionally restore(), start(), ..., stop(). The rpc
// server must be stopped before the Learner is destroyed.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/config/experiment_config.h"
#include "engine/learner/actor_event.h"
#include "engine/learner/actor_status.h"
#include "engine/learner/stats.h"
#include "envs/env.h"
#include "envs/spec.h"

namespace moonseed::rpc {
class ActorService;
}  // namespace moonseed::rpc

namespace moonseed::engine {

class StepSync;

// The files the config's env reads besides its id and options (envs::EnvFiles).
envs::EnvFiles env_files(const EnvConfig& env);
// The env's spec as the learner's model sees it: described (a plugin or Python env by a child
// process, envs/describe.h), then wrapped by env.wrappers. std::invalid_argument as describe_env.
envs::EnvSpec model_env_spec(const ExperimentConfig& config);

class Learner {
 public:
  // Builds the model on the configured device. Throws std::invalid_argument for
  // a config with problems (engine/config/config_problems.h, which the loader
  // has reported already), or an env id or model config that cannot be built.
  Learner(const ExperimentConfig& config, std::string run_id);
  // The same with the env's spec already described (model_env_spec(config), as the loader's
  // LoadedExperiment::spec holds it): a plugin or Python env is not described a second time.
  Learner(const ExperimentConfig& config, std::string run_id, envs::EnvSpec spec);
  ~Learner();
  Learner(const Learner&) = delete;
  Learner& operator=(const Learner&) = delete;

  const envs::EnvSpec& env_spec() const { return spec_; }

  // What the rpc server serves (ActorGateway): lives as long as the learner.
  rpc::ActorService& actor_service();

  // Run-to-completion (inference.io_threads = 0): the inference thread calls
  // `pump` to do the socket work that feeds it instead of sleeping, and
  // `wake` interrupts a waiting pump. Only before start().
  void set_io_pump(std::function<void(std::chrono::nanoseconds)> pump, std::function<void()> wake);

  // Actors must present this token in their Hello (empty: no check). Only
  // before start().
  void set_auth_token(std::string token);
  // A rank of a learner group places actors that let it (Hello.any_rank) on
  // the rank `placement` names (ActorGateway::set_placement). Only before start().
  void set_actor_placement(std::function<std::optional<std::string>()> placement);

  // Records every trajectory into the experience log at `directory`
  // (config.record; engine/learner/experience_recorder.h), continuing the episode ids
  // of a log already there. A directory that cannot be used turns recording
  // off (stats().record->error) and training goes on. Only before start().
  void record_to(const std::string& directory);

  // Starts from the experience log config.warm_start.log (Agent::warm_start:
  // V-trace trains on its unrolls, R2D2 pre-fills its replay), calling
  // `progress` once before it begins, then after each step. Only before start(). Throws
  // std::invalid_argument for a log that cannot be read or does not fit the
  // env (naming the log and the column).
  WarmStartReport warm_start(const std::function<void(const WarmStartReport&)>& progress = {});

  // Makes this learner one rank of a learner group (engine/learner/step_sync.h):
  // every training step is a round with the other ranks, gradients are averaged
  // over them, the weights compared every sync.check_every() steps. Hot config
  // follows the group: at the step the ranks agree on version v, every rank
  // applies config_of_version(v) (what rank 0 was given by set_hot_config with
  // v, which its caller published for the others first), and set_hot_config on
  // this learner only publishes boundary fields to its own actors. `sync` is not
  // owned and outlives the learner's threads. Only before start().
  // `publish` (rank 0: may be empty elsewhere) is called by set_hot_config
  // before the version becomes visible to the group, so that the others can
  // read the config of every version the group agrees on.
  void join_group(StepSync& sync, std::function<ExperimentConfig(uint64_t version)> config_of_version,
                  std::function<void(uint64_t version, const ExperimentConfig& config)> publish);
  // A hash of the weights a group keeps equal on every rank
  // (engine/learner/weights_hash.h), between two training steps. Thread-safe.
  uint64_t weights_hash();
  // This rank asks its group to stop: every rank leaves its training loop at
  // the next round (LearnerStats::group_stopped). Without a group, nothing. Thread-safe.
  void request_group_stop();

  // Loads model, optimizer and counters (and what the algorithm keeps beside
  // them, such as R2D2's replay). Only before start(). Throws CheckpointError.
  Counters restore(const std::string& checkpoint_path);
  // A rank of a learner group keeps its part of every group checkpoint
  // (docs/distributed-design.md "Checkpoints": its own counters, and R2D2's
  // replay): at each round the group agrees to checkpoint, and at its last
  // round, the training thread writes it at part_of_step(step)
  // (RunDirectory::rank_part_path), sealed as a checkpoint is (its manifest
  // last), then calls `saved` (the run prunes). A
  // part that cannot be written is logged; training goes on. Only before start().
  void keep_rank_parts(std::function<std::string(int64_t step)> part_of_step, std::function<void()> saved);
  // A rank of a group that has stopped: its part of the step it reached,
  // unless it has one (the group's last round wrote it). False when it could
  // not be written (logged). Thread-safe.
  bool save_rank_part();
  // Rank 0 of a group resuming, after restore(): its own counters from its
  // part (the checkpoint's frames are the group's). Errors as restore().
  Counters restore_rank_counters(const std::string& part, int rank);
  // A rank other than 0 of a group resuming: the weights, optimizer state and
  // optimizer step of the group's checkpoint `model` (rank 0's, sent to this
  // rank), with this rank's counters and companions (R2D2's replay) from its
  // part ("" for none: they start afresh). Errors as restore().
  Counters restore_group_rank(const std::string& model, const std::string& part, int rank);
  // What a complete checkpoint has beside its file, as suffixes of its path
  // (R2D2: ".replay"): RunDirectory::newest_checkpoint takes them.
  std::vector<std::string> checkpoint_companions() const;
  void start();
  // Closes the queues, joins every thread. Idempotent. Actors still connected
  // get no more replies; the rpc server says Bye to them.
  void stop();

  // Hot reload (docs/experiments-design.md): the training thread takes the hot
  // fields of `config` (the schema's reload class "hot": vtrace.*,
  // optimizer.lr, ...) and its schedules (evaluated at every step against
  // frames) at the top of its next step. Every other field must
  // equal the running config's: the caller refuses reloads that change
  // restart-only fields (engine::changed_fields and the schema's reload
  // classes). Connected actors, and actors that connect later, are sent a
  // ConfigUpdate with `version` and the boundary fields (engine/config/actor_config.h:
  // reward shaping), which each group of envs takes at its next unroll boundary
  // and from then stamps on its StepBatches.
  // `version` must grow with each call. Thread-safe; any time after start().
  void set_hot_config(const ExperimentConfig& config, uint64_t version);

  // stop.frames, enforced where frames are counted: while frames >= `frames`
  // (> 0) the inference thread takes no more steps (those in flight wait,
  // unanswered), so a run that stops on frames ends at most one inference
  // batch past them, however late its control loop looks. 0 = no limit (the
  // default). A higher limit lets acting go on. Thread-safe.
  void set_frame_limit(int64_t frames);

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

  // Also says when the learner stopped on its own (LearnerStats::failure):
  // the model's weights or outputs went non-finite. From then on it neither
  // acts nor trains, and save_checkpoint throws CheckpointError, so the last
  // good checkpoint stays the newest; the caller stops the run.
  LearnerStats stats() const;

  // What happened to actors since the last call, oldest first: joins, leaves,
  // hung actors, ActorNotices (each also logged when it happens). At most the
  // newest 1024 are kept between calls. Thread-safe.
  std::vector<ActorEvent> take_actor_events();
  // Frees the slot of every actor silent for longer than its timeout (at
  // least `timeout_s`; ActorGateway::release_hung) and tells it to reconnect.
  // Returns them. Thread-safe.
  std::vector<HungActor> release_hung_actors(double timeout_s);
  // StepBatches actor `actor_id` has sent over all its connections. Thread-safe.
  uint64_t actor_step_batches(int actor_id) const;
  // Env steps actor `actor_id` has sent over all its connections, resets
  // excluded (its progress; 0 for an id out of range). Thread-safe.
  uint64_t actor_env_steps(int actor_id) const;
  // The actor slots ever connected, by id, at most `limit` of them: connected
  // or not, host, pid, env steps received, connections, seconds connected
  // (ActorGateway::actor_list). Apart from stats(), which the control loop
  // reads far more often, so that these strings are copied only when asked. Thread-safe.
  ActorList actor_list(size_t limit) const;
  // The run is ending: actors that leave from now on are not logged one by
  // one (their leaves are still events). Thread-safe.
  void expect_actors_to_leave();
  // Writes a checkpoint between two training steps (waits for the current one),
  // then seals it: its manifest PATH.sum, the CRC-32C and size of each of its
  // files (engine/run/checkpoint_manifest.h), written last. `elapsed_s` is
  // stored in the counters. Throws CheckpointError (a full disk...): no file
  // of the failed checkpoint is left (one that could not be sealed included),
  // training goes on.
  void save_checkpoint(const std::string& path, double elapsed_s);
  // The same, to the path `path_of_step` gives for the optimizer step the
  // checkpoint holds: it is read with training held, so the name and the
  // content agree. Returns that path. In a learner group (rank 0) the
  // training thread saves it at the next round, where every rank saves its
  // part of the same step; once the group has stopped, at its last step.
  std::string save_checkpoint(const std::function<std::string(int64_t step)>& path_of_step, double elapsed_s);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  envs::EnvSpec spec_;
};

}  // namespace moonseed::engine
