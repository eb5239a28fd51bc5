// Agent: what differs between the learner's algorithms, behind one interface
// (docs/r2d2-design.md "Learner: one shell, two agents"). Not user-facing.
//
// engine/learner/learner.cc keeps what every algorithm shares: actor admission and
// slots, the inference batcher and its thread, replies on the wire, episode
// statistics, pause, hot reload, evaluation episodes and checkpoint files.
// An Agent owns the network(s), the optimizer, and where steps go between
// acting and learning (V-trace: unrolls -> FIFO -> prefetcher; R2D2: sequences
// -> prioritized replay).
//
// Threads: the inference thread calls wait_for_room/observe/act/
// take_finished_episodes; the training thread calls await_batch/train; save/
// restore run with no training step in flight (the learner's train_mu) and
// restore only before start; stats(), close() and evaluation policies from any
// thread. An agent guards its own weights: act() and evaluation read them under
// a shared lock, train() writes them under the exclusive one, so acting always
// sees whole, newest weights.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "engine/learner/checkpoint.h"
#include "engine/learner/stats.h"
#include "engine/config/experiment_config.h"
#include "engine/learner/experience_recorder.h"
#include "engine/learner/log_unrolls.h"
#include "engine/learner/unroll_store.h"
#include "envs/spec.h"

namespace moonseed::engine {

// Agent::act found rows whose action distribution (V-trace: logits, mean or
// log std; R2D2: Q-values) is not finite, before recording anything: it acted
// on nothing. `rows` index the batch, ascending. The learner asks
// weights_finite() whose fault it is: the model's (training diverged) or those
// rows' observations' (finite but large enough to overflow the net).
class NonFiniteOutputs : public std::runtime_error {
 public:
  explicit NonFiniteOutputs(std::vector<int64_t> rows)
      : std::runtime_error("the model's outputs are not finite for " + std::to_string(rows.size()) + " row(s)"),
        rows_(std::move(rows)) {}
  const std::vector<int64_t>& rows() const { return rows_; }

 private:
  std::vector<int64_t> rows_;
};

// The rows of `outputs` ([n, ...], any device) holding a NaN or infinity, ascending.
inline std::vector<int64_t> nonfinite_rows(const torch::Tensor& outputs) {
  const torch::Tensor bad = torch::isfinite(outputs).reshape({outputs.size(0), -1}).all(1).logical_not();
  const torch::Tensor index = bad.nonzero().reshape({-1}).to(torch::kCPU, torch::kInt64).contiguous();
  return std::vector<int64_t>(index.data_ptr<int64_t>(), index.data_ptr<int64_t>() + index.numel());
}

// True when every element of every tensor in `tensors` is finite.
inline bool all_finite(const std::vector<torch::Tensor>& tensors) {
  for (const torch::Tensor& t : tensors) {
    if (!torch::isfinite(t).all().item<bool>()) return false;
  }
  return true;
}

// Plays evaluation episodes (Learner::evaluate): one per row of every batch.
class EvalPolicy {
 public:
  virtual ~EvalPolicy() = default;
  // obs [n, obs...] on the CPU in the observation's dtype; `rewards` the reward
  // of each env's previous action (0 at the first step); `first` at an
  // episode's first observation. Returns the actions on the CPU: int32 [n] for
  // Discrete, float [n, A] for Box.
  virtual torch::Tensor act(const torch::Tensor& obs, const std::vector<float>& rewards, bool first) = 0;
};

// Called on the training thread after each backward pass and before gradient
// clipping, with the trained net's parameters (a learner group averages their
// gradients over its ranks: engine/learner/step_sync.h). May throw GroupError.
using GradientHook = std::function<void(const std::vector<torch::Tensor>& params)>;

class Agent {
 public:
  virtual ~Agent() = default;

  // ---- inference thread
  // Blocks while the agent is not ready to take more steps (its backpressure);
  // false once closed.
  virtual bool wait_for_room() = 0;
  // x_t of env slot `slot` with the reward and flags (envs::kFirst, ...) of the
  // action before it and the config version the actor stamped. `reward` is
  // what training uses (shaped when reward shaping is on), `env_reward` the
  // env's own, for the experience log. May block (backpressure) until close().
  virtual void observe(int slot, const uint8_t* obs, float reward, uint8_t flags, uint64_t config_version,
                       float env_reward) = 0;
  // Actions for `slots`, each observed just before, from obs [n, obs...] on the
  // CPU; records them. `policy_version` = optimizer steps so far. Returns CPU
  // actions: int64 [n] for Discrete, float [n, A] for Box. Never samples from
  // a non-finite distribution: throws NonFiniteOutputs instead, having
  // recorded nothing and changed no slot's state.
  virtual torch::Tensor act(const std::vector<int64_t>& slots, const torch::Tensor& obs,
                            int64_t policy_version) = 0;
  // Forgets the slot's partial trajectory (its actor's connection was closed
  // in the middle of a step); its next observation starts afresh.
  virtual void reset_slot(int slot) = 0;
  virtual void take_finished_episodes(std::vector<EpisodeResult>& out) = 0;

  // ---- training thread
  // Blocks until a training batch is ready; false once closed (and drained).
  virtual bool await_batch() = 0;
  // One step on that batch with `config`'s hot fields and learning rate `lr`.
  // `policy_version` = optimizer steps before this one.
  virtual TrainReport train(const ExperimentConfig& config, double lr, int64_t policy_version) = 0;

  // ---- any thread
  // Steps per unroll: the actors' unroll boundary (where they take new
  // boundary config) and the experience log's records. V-trace:
  // learner.unroll; R2D2: r2d2.period.
  virtual int64_t unroll_length() const = 0;
  // Unblocks every wait of both threads; later waits return false at once.
  virtual void close() = 0;
  virtual AgentStats stats() const = 0;
  // False when a weight of the acting net is NaN or infinite (training
  // diverged). Reads them under the weights lock held shared.
  virtual bool weights_finite() = 0;
  // A policy over `n` envs acting with the newest weights: greedy, or as the
  // algorithm explores at evaluation (V-trace: sampled; R2D2: eval_epsilon).
  virtual std::unique_ptr<EvalPolicy> evaluation_policy(int n, bool greedy, uint64_t seed) = 0;

  // ---- before the threads start
  // Hands every trajectory the agent acts in to `recorder` (not owned; it
  // outlives the agent's use of it: the learner closes the agent first), the
  // log's episode ids continuing from `next_episode_id`. V-trace: its unrolls,
  // after the prefetcher has stacked them; R2D2: the training envs' steps,
  // cut into unrolls of r2d2.period steps (evaluation envs are not recorded).
  virtual void set_recorder(ExperienceRecorder* recorder, int64_t next_episode_id) = 0;
  // Starts from a recorded log (config.warm_start): V-trace trains
  // warm_start.steps steps on its unrolls (the V-trace loss plus bc_cost times
  // behaviour cloning), going over the log again as often as needed; R2D2
  // replays its steps into the replay with a zero recurrent state and inserts
  // the sequences with priorities from the online net. `progress` is called
  // once before the first step / unroll (with steps_planned set), then after
  // every one. Throws std::invalid_argument for a log too small to use.
  virtual WarmStartReport warm_start(LogUnrolls& log, const ExperimentConfig& config,
                                     const std::function<void(const WarmStartReport&)>& progress) = 0;

  // ---- learner groups
  // Before start: `hook` runs at every training step between backward and clipping.
  virtual void set_gradient_hook(GradientHook hook) = 0;
  // Training thread: as await_batch, but gives up after `wait`: false then, or
  // once closed (closed() says which). A rank of a group waits this way, so
  // that a rank short of data does not hold the others' steps.
  virtual bool await_batch_for(std::chrono::milliseconds wait) = 0;
  virtual bool closed() const = 0;
  // Training thread, in a group's step for which this rank has no batch: zero
  // gradients go through the hook (which averages the ranks' that had one),
  // then clipping and the optimizer step, as train() does, so that the
  // weights stay equal on every rank. Reports no frames and no losses.
  virtual TrainReport train_without_batch(const ExperimentConfig& config, double lr) = 0;
  // Training thread, between steps: a hash of every weight the ranks of a group
  // must keep equal (the trained net, and R2D2's target net), engine/learner/weights_hash.h.
  virtual uint64_t weights_hash() = 0;

  // ---- checkpoints (no training step in flight)
  // Writes the checkpoint PATH and its companions (checkpoint_companions()),
  // PATH last, so that PATH exists only once everything it needs is on disk.
  // Throws CheckpointError; a failed save removes what it wrote (but a file
  // that replaced one of an earlier checkpoint of the same step).
  virtual void save(const std::string& path, const Counters& counters) = 0;
  // Only before the threads start. Throws CheckpointError, leaving the agent as it was.
  Counters restore(const std::string& path) { return restore(path, path); }
  // The same with the companions read from COMPANIONS + each suffix instead of
  // beside PATH: a rank of a learner group other than 0 takes the group's model
  // (rank 0's, broadcast) and its own part (R2D2: its own replay).
  virtual Counters restore(const std::string& path, const std::string& companions) = 0;
  // A learner group's rank part (docs/distributed-design.md "Checkpoints"):
  // what this rank alone holds, written to BASE + each of
  // checkpoint_companions() (R2D2: BASE.replay). Rank 0 writes its part
  // within save(); the other ranks write only this. Throws CheckpointError.
  virtual void save_companions(const std::string& base) { (void)base; }
  // The acting weights alone, for evaluation outside a run (`moonseed eval`): no optimizer
  // state, nothing beside PATH (R2D2's replay) is read. Errors as restore.
  virtual Counters restore_weights(const std::string& path) { return restore(path); }
  // What a complete checkpoint has beside PATH, as suffixes of PATH (R2D2: ".replay").
  virtual std::vector<std::string> checkpoint_companions() const { return {}; }
};

// Which env slots (actor * envs_per_actor + env) only evaluate: the last
// topology.eval_envs_per_actor envs of each actor.
inline std::vector<bool> evaluation_slots(const ExperimentConfig& config) {
  const TopologyConfig& t = config.topology;
  std::vector<bool> eval(static_cast<size_t>(t.actors) * static_cast<size_t>(t.envs_per_actor), false);
  const size_t per_actor = static_cast<size_t>(t.envs_per_actor);
  for (size_t slot = 0; slot < eval.size(); ++slot) {
    eval[slot] = static_cast<int>(slot % per_actor) >= t.envs_per_actor - t.eval_envs_per_actor;
  }
  return eval;
}

}  // namespace moonseed::engine
