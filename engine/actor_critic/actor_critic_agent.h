// The acting side every actor-critic algorithm shares (V-trace, APPO), behind
// engine/learner/agent.h: the policy net acts with sampled actions; each env slot's steps build
// unrolls (UnrollStore) that wait in a bounded FIFO, the prefetcher collates them into batches
// on the device, and the training thread hands each batch to the algorithm's update(). A full
// FIFO blocks observe(), which holds every actor back (backpressure).
//
// A recurrent policy (a model ending in an lstm: IMPALA's agent) keeps every slot's state on
// the device between its steps, zeroed at an episode's first observation and when the slot's
// actor goes away; each unroll keeps the state its step 0 was acted on with, and training
// unrolls the net from it (unroll_outputs.h).
//
// Evaluation envs (topology.eval_envs_per_actor, agent.h evaluation_slots) act with the same
// weights, sampled or greedy (`eval_greedy`), but their steps go to a store of their own whose
// unrolls are dropped: they count episodes for eval_return_mean and never reach the FIFO,
// training or the experience log.
//
// An algorithm subclasses it with update() (one batch: its losses and optimizer steps, each
// through apply_gradients()) and warm_start_loss(), and registers a factory
// (engine/learner/agent_registry.h); actor_critic_check_model and actor_critic_export are the
// registration's model check and export for a policy net.
#pragma once

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "base/mutex.h"
#include "engine/learner/agent.h"
#include "engine/learner/prefetcher.h"
#include "engine/learner/unroll_store.h"
#include "engine/runtime/bounded_queue.h"
#include "envs/spec.h"
#include "models/export.h"
#include "models/policy_net.h"

namespace moonseed::engine {

class ActorCriticAgent : public Agent {
 public:
  ActorCriticAgent(const ExperimentConfig& config, const envs::EnvSpec& spec, torch::Device device, bool eval_greedy);
  ~ActorCriticAgent() override;

  bool wait_for_room() override;
  void observe(int slot, const uint8_t* obs, float reward, uint8_t flags, uint64_t config_version,
               float env_reward) override;
  torch::Tensor act(const std::vector<int64_t>& slots, const torch::Tensor& obs, int64_t version) override;
  void reset_slot(int slot) override;
  void take_finished_episodes(std::vector<EpisodeResult>& out) override;
  bool await_batch() override;
  bool await_batch_for(std::chrono::milliseconds wait) override;
  // The batch await_batch() took, through update(); report.frames is the batch's.
  TrainReport train(const ExperimentConfig& config, double lr, int64_t version) final;
  // optimizer_steps_per_batch() steps of zero gradients, each through the gradient hook.
  TrainReport train_without_batch(const ExperimentConfig& config, double lr) final;
  int64_t unroll_length() const override;
  void close() override;
  bool closed() const override;
  bool weights_finite() override;
  AgentStats stats() const override;
  std::unique_ptr<EvalPolicy> evaluation_policy(int n, bool greedy, uint64_t seed) override;
  void set_recorder(ExperienceRecorder* recorder, int64_t next_episode_id) override;
  WarmStartReport warm_start(LogUnrolls& log, const ExperimentConfig& config,
                             const std::function<void(const WarmStartReport&)>& progress) final;
  void set_gradient_hook(GradientHook hook) override;
  uint64_t weights_hash() override;
  void save(const std::string& path, const Counters& counters) override;
  Counters restore(const std::string& path, const std::string& companions) override;

 protected:
  // The warm start's loss on one batch of logged unrolls: the algorithm's loss plus
  // `bc_cost` * -mean log pi(a_t|x_t) (behaviour cloning). bc is that term's value.
  struct WarmStartLoss {
    torch::Tensor total;
    double bc = 0;
  };

  // One batch: the algorithm's losses and every optimizer step through apply_gradients(), with
  // the learning rate `lr` already set. Fills applied, grad_norm, loss_total and metrics.
  virtual TrainReport update(const UnrollBatch& batch, const ExperimentConfig& config, int64_t version) = 0;
  virtual WarmStartLoss warm_start_loss(const UnrollBatch& batch, const ExperimentConfig& config) = 0;
  // How many times update() calls apply_gradients() on one batch (the same on every learner
  // of a group, whose gradient hook is an all-reduce).
  virtual int64_t optimizer_steps_per_batch(const ExperimentConfig& config) const {
    (void)config;
    return 1;
  }

  // After backward(): the gradient hook, clipping to optimizer.max_grad_norm, and the optimizer
  // step under the weights lock. Returns the norm before clipping; when it is not finite the
  // step is skipped (one bad batch must not poison the weights).
  double apply_gradients(const ExperimentConfig& config);
  void zero_grad() { optimizer_->zero_grad(); }
  // How many optimizer steps old the acting policy of `batch` was, averaged over its steps t < T.
  static double policy_lag(const UnrollBatch& batch, int64_t version);

  models::PolicyNet& model() { return model_; }

 private:
  // What a recurrent step of some slots was fed, on the CPU, for their unrolls.
  struct Recurrent {
    torch::Tensor index;  // [n] int64: the slots
    torch::Tensor h, c;   // [n, H]: their states, zeroed where an episode starts
    torch::Tensor prev_action, prev_reward;
  };

  // Clipping and the optimizer step under the weights lock (apply_gradients without the hook);
  // the norm before clipping, the step skipped when it is not finite.
  double clip_and_step(const ExperimentConfig& config);
  bool is_eval(int slot) const {
    return static_cast<size_t>(slot) < eval_slot_.size() && eval_slot_[static_cast<size_t>(slot)];
  }
  bool discrete() const { return spec_.action.kind == envs::SpaceKind::kDiscrete; }
  models::PolicyOutput recurrent_step(const std::vector<int64_t>& slots, const torch::Tensor& x, Recurrent& used);
  torch::Tensor with_greedy_eval_rows(const std::vector<int64_t>& slots, const models::PolicyOutput& policy,
                                      const torch::Tensor& sampled) const;

  const envs::EnvSpec spec_;
  const torch::Device device_;
  models::PolicyNet model_;
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
  GradientHook gradient_hook_;  // set before start; training thread
  std::vector<torch::Tensor> params_;
  // Shared: forward passes for acting; exclusive: the optimizer step, which
  // writes the parameters in place (the tensors, not a member, so no GUARDED_BY).
  base::SharedMutex weights_mu_;
  BoundedQueue<UnrollPtr> unrolls_;    // inference -> prefetcher
  const std::vector<bool> eval_slot_;  // evaluation envs' slots
  const bool eval_greedy_;
  UnrollStore store_;       // inference thread only: training envs' steps
  UnrollStore eval_store_;  // inference thread only: evaluation envs' steps, never trained on
  std::unique_ptr<Prefetcher> prefetcher_;
  std::optional<UnrollBatch> batch_;                    // training thread: from await_batch() to train()
  std::atomic<ExperienceRecorder*> recorder_{nullptr};  // set before the threads start
  // Inference thread only: per slot, whether its latest observation started an episode, and
  // (recurrent policies) every slot's state [slots, H] on the device.
  std::vector<uint8_t> first_;
  torch::Tensor state_h_, state_c_;
  // Recurrent: each slot's previous action ([slots] int64, -1 for none; [slots, A] float) and
  // reward ([slots]), on the CPU: what its next step is fed.
  torch::Tensor prev_action_, prev_reward_;
};

// A registration's ModelCheck for a policy net: "" when config.model builds for `spec`.
std::string actor_critic_check_model(const ExperimentConfig& config, const envs::EnvSpec& spec);
// A registration's ExportFn for a policy net (models::export_policy_net).
models::Exported actor_critic_export(const ExperimentConfig& config, const envs::EnvSpec& spec,
                                     const std::string& checkpoint, models::ExportOrigin& origin);
// The export signature of a policy net, for `moonseed export --help`.
extern const char* const kActorCriticExportSignature;

}  // namespace moonseed::engine
