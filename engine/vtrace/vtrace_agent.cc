// IMPALA's V-trace behind engine/learner/agent.h: the policy net acts with sampled
// actions; each env slot's steps build unrolls (UnrollStore) that wait in a
// bounded FIFO, the prefetcher collates them into batches on the device, and
// the training thread runs vtrace_loss and the optimizer. A full FIFO blocks
// observe(), which holds every actor back (backpressure).
//
// A recurrent policy (a model ending in an lstm: IMPALA's agent) keeps every slot's
// state on the device between its steps, zeroed at an episode's first observation
// and when the slot's actor goes away; each unroll keeps the state its step 0 was
// acted on with, and training unrolls the net from it (vtrace_loss).
//
// Evaluation envs (topology.eval_envs_per_actor, agent.h evaluation_slots) act
// with the same weights, sampled or greedy (vtrace.eval_greedy), but their steps
// go to a store of their own whose unrolls are dropped: they count episodes for
// eval_return_mean and never reach the FIFO, training or the experience log.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "base/mutex.h"
#include "engine/learner/agent.h"
#include "engine/learner/agent_registry.h"
#include "engine/runtime/bounded_queue.h"
#include "engine/learner/optimizer.h"
#include "engine/learner/weights_hash.h"
#include "engine/learner/prefetcher.h"
#include "engine/vtrace/config/vtrace_config.h"
#include "engine/vtrace/vtrace_loss.h"
#include "envs/env.h"
#include "models/action_dist.h"
#include "models/policy_net.h"

namespace moonseed::engine {
namespace {

// Throws NonFiniteOutputs when a row of `policy` is not a distribution one can sample from.
void check_finite(const models::PolicyOutput& policy) {
  torch::Tensor outputs = policy.logits_or_mean;
  if (policy.log_std.defined()) outputs = torch::cat({outputs, policy.log_std}, 1);
  if (torch::isfinite(outputs).all().item<bool>()) return;
  throw NonFiniteOutputs(nonfinite_rows(outputs));
}

class VtraceEvalPolicy : public EvalPolicy {
 public:
  VtraceEvalPolicy(models::PolicyNet model, base::SharedMutex& weights, torch::Device device, bool greedy,
                   bool discrete)
      : model_(std::move(model)), weights_(weights), device_(device), greedy_(greedy), discrete_(discrete) {}

  // A recurrent policy's rows start from a zero state, no previous action and no reward at
  // their episodes' first step.
  torch::Tensor act(const torch::Tensor& obs, const std::vector<float>& rewards, bool first) override {
    torch::Tensor actions;
    {
      torch::NoGradGuard no_grad;
      base::ReaderMutexLock lock(weights_);
      models::PolicyOutput policy;
      if (model_->recurrent()) {
        const int64_t n = obs.size(0);
        if (first || !state_.h.defined() || state_.h.size(0) != n) {
          state_ = model_->initial_state(n);
          prev_action_ = discrete_ ? torch::full({n}, -1, torch::kInt64) : torch::zeros({n, model_->action_size()});
        }
        const torch::Tensor reward = torch::tensor(rewards, torch::kFloat32).reshape({n});
        std::tie(policy, state_) = model_->step(obs.to(device_), prev_action_.to(device_), reward.to(device_), state_);
      } else {
        policy = model_->forward(obs.to(device_));
      }
      check_finite(policy);
      actions = greedy_ ? models::greedy(policy) : models::sample(policy).actions;
    }
    actions = actions.to(torch::kCPU);
    if (model_->recurrent()) prev_action_ = actions.to(discrete_ ? torch::kInt64 : torch::kFloat32).reshape(prev_action_.sizes());
    return actions.to(discrete_ ? torch::kInt32 : torch::kFloat32).contiguous();
  }

 private:
  models::PolicyNet model_;
  base::SharedMutex& weights_;
  torch::Device device_;
  bool greedy_;
  bool discrete_;
  models::PolicyNetImpl::State state_;  // recurrent: one row per env
  torch::Tensor prev_action_;           // recurrent: each env's previous action, on the CPU
};

UnrollShape unroll_shape(const ExperimentConfig& config, const envs::EnvSpec& spec, const models::PolicyNet& model) {
  UnrollShape shape = UnrollShape::from_spec(spec, config.learner.unroll);
  shape.state_size = model->state_size();
  return shape;
}

class VtraceAgent : public Agent {
 public:
  VtraceAgent(const ExperimentConfig& config, const envs::EnvSpec& spec, torch::Device device)
      : spec_(spec),
        device_(device),
        model_(config.model, spec),
        unrolls_(static_cast<size_t>(config.learner.queue_capacity)),
        eval_slot_(evaluation_slots(config)),
        eval_greedy_(config.section<VTraceConfig>().eval_greedy),
        store_(config.topology.actors * config.topology.envs_per_actor,
               UnrollPool::create(unroll_shape(config, spec, model_), config.learner.queue_capacity)),
        eval_store_(store_.num_slots(), UnrollPool::create(store_.pool().shape())),
        first_(static_cast<size_t>(store_.num_slots()), 0) {
    model_->to(device_);
    if (model_->recurrent()) {
      const int64_t slots = store_.num_slots();
      state_h_ = model_->initial_state(slots).h;
      state_c_ = torch::zeros_like(state_h_);
      prev_action_ = discrete() ? torch::full({slots}, -1, torch::kInt64) : torch::zeros({slots, model_->action_size()});
      prev_reward_ = torch::zeros({slots});
    }
    optimizer_ = make_optimizer(config.optimizer, model_->parameters());
    params_ = model_->parameters();
    // Unrolls go to the recorder once stacked, when there is one (set_recorder).
    prefetcher_ = std::make_unique<Prefetcher>(unrolls_, store_.pool().shape(), config.learner.batch, device_, 2,
                                               [this](UnrollPtr unroll) {
                                                 if (ExperienceRecorder* r = recorder_.load()) {
                                                   r->offer(std::move(unroll));
                                                 }
                                               });
  }

  ~VtraceAgent() override { close(); }

  bool wait_for_room() override { return !unrolls_.closed(); }

  void observe(int slot, const uint8_t* obs, float reward, uint8_t flags, uint64_t config_version,
               float env_reward) override {
    const bool first = (flags & envs::kFirst) != 0;
    first_[static_cast<size_t>(slot)] = first;
    if (model_->recurrent()) {  // what the policy is fed with x_t: a_{t-1} (kept by act()) and r_{t-1}
      prev_reward_.data_ptr<float>()[slot] = first ? 0.f : reward;
      if (first) prev_action_[slot].fill_(discrete() ? -1 : 0);
    }
    if (is_eval(slot)) {
      eval_store_.observe(slot, obs, reward, flags, config_version, env_reward);  // its unroll goes back to the pool
      return;
    }
    UnrollPtr done = store_.observe(slot, obs, reward, flags, config_version, env_reward);
    // Blocks when the FIFO is full: that holds every actor back.
    if (done) unrolls_.push(std::move(done));
  }

  torch::Tensor act(const std::vector<int64_t>& slots, const torch::Tensor& obs, int64_t version) override {
    models::ActionSample sample;
    Recurrent used;  // recurrent: what the slots acted with, on the CPU
    {
      torch::NoGradGuard no_grad;
      torch::Tensor x = obs.to(device_, /*non_blocking=*/true);
      base::ReaderMutexLock weights(weights_mu_);
      models::PolicyOutput policy;
      if (model_->recurrent()) {
        policy = recurrent_step(slots, x, used);
      } else {
        policy = model_->forward(x);
        check_finite(policy);
      }
      sample = models::sample(policy);
      if (eval_greedy_) sample.actions = with_greedy_eval_rows(slots, policy, sample.actions);
    }
    torch::Tensor actions = sample.actions.to(torch::kCPU).contiguous();
    torch::Tensor logp = sample.logp.to(torch::kCPU, torch::kFloat32).contiguous();
    const int64_t n = static_cast<int64_t>(slots.size());
    const auto* action_bytes = static_cast<const uint8_t*>(actions.data_ptr());
    const int64_t action_stride = actions.numel() / std::max<int64_t>(n, 1) * actions.element_size();
    const float* logps = logp.data_ptr<float>();
    const int64_t H = model_->state_size();
    for (int64_t k = 0; k < n; ++k) {
      const int slot = static_cast<int>(slots[static_cast<size_t>(k)]);
      RecurrentInputs inputs;
      if (H > 0) {
        inputs.h = used.h.data_ptr<float>() + k * H;
        inputs.c = used.c.data_ptr<float>() + k * H;
        inputs.prev_action = static_cast<const uint8_t*>(used.prev_action.data_ptr()) + k * action_stride;
        inputs.prev_reward = used.prev_reward.data_ptr<float>()[k];
      }
      (is_eval(slot) ? eval_store_ : store_)
          .act(slot, action_bytes + k * action_stride, logps[k], version, H > 0 ? &inputs : nullptr);
    }
    if (H > 0) {
      prev_action_.index_copy_(0, used.index, actions.reshape(used.prev_action.sizes()).to(prev_action_.scalar_type()));
    }
    return actions;
  }

  void reset_slot(int slot) override {
    (is_eval(slot) ? eval_store_ : store_).reset_slot(slot);
    if (model_->recurrent()) {
      torch::NoGradGuard no_grad;
      state_h_[slot].zero_();
      state_c_[slot].zero_();
      prev_action_[slot].fill_(discrete() ? -1 : 0);
      prev_reward_[slot].fill_(0);
    }
  }

  void take_finished_episodes(std::vector<EpisodeResult>& out) override {
    store_.take_finished_episodes(out);
    eval_store_.take_finished_episodes(out);
  }

  bool await_batch() override {
    batch_ = prefetcher_->next();
    return batch_.has_value();
  }

  TrainReport train(const ExperimentConfig& config, double lr, int64_t version) override {
    TrainReport report;
    const UnrollBatch& batch = *batch_;
    set_learning_rate(*optimizer_, lr);
    LossTerms loss = vtrace_loss(model_, batch, config.section<VTraceConfig>());
    optimizer_->zero_grad();
    loss.total.backward();
    if (gradient_hook_) gradient_hook_(params_);
    report.grad_norm = clip_grad_norm(params_, config.optimizer.max_grad_norm);
    if (!std::isfinite(report.grad_norm)) return report;  // one bad batch must not poison the weights
    {
      base::WriterMutexLock weights(weights_mu_);
      optimizer_->step();
    }
    report.applied = true;
    report.frames = batch.frames;
    report.loss_total = loss.total.item<double>();
    // How many optimizer steps old the acting policy was, averaged over the batch.
    // Step T carries no action (it is step 0 of the next unroll): leave it out.
    const double policy_lag =
        static_cast<double>(version) -
        batch.policy_version.narrow(0, 0, batch.T()).to(torch::kFloat64).mean().item<double>();
    report.metrics = {{"loss_policy", loss.policy},   {"loss_baseline", loss.baseline},
                      {"loss_entropy", loss.entropy}, {"mean_rho", loss.mean_rho},
                      {"policy_lag", policy_lag},     {"entropy_cost", config.section<VTraceConfig>().entropy_cost}};
    return report;
  }

  int64_t unroll_length() const override { return store_.pool().shape().unroll_length; }

  void close() override {
    unrolls_.close();  // unblocks an inference thread held by backpressure
    prefetcher_->stop();
  }

  bool weights_finite() override {
    torch::NoGradGuard no_grad;
    base::ReaderMutexLock weights(weights_mu_);
    return all_finite(params_);
  }

  AgentStats stats() const override {
    AgentStats s;
    s.queue_size = static_cast<int64_t>(unrolls_.size());
    return s;
  }

  std::unique_ptr<EvalPolicy> evaluation_policy(int, bool greedy, uint64_t) override {
    return std::make_unique<VtraceEvalPolicy>(model_, weights_mu_, device_, greedy,
                                              spec_.action.kind == envs::SpaceKind::kDiscrete);
  }

  void set_recorder(ExperienceRecorder* recorder, int64_t next_episode_id) override {
    store_.set_next_episode_id(next_episode_id);
    recorder_.store(recorder);
  }

  WarmStartReport warm_start(LogUnrolls& log, const ExperimentConfig& config,
                             const std::function<void(const WarmStartReport&)>& progress) override {
    WarmStartReport report;
    report.steps_planned = config.warm_start.steps;
    if (progress) progress(report);
    const size_t batch_size = static_cast<size_t>(config.learner.batch);
    std::vector<UnrollPtr> pending;
    while (report.steps < config.warm_start.steps) {
      UnrollPtr unroll = log.next();
      if (!unroll) {
        if (report.unrolls < static_cast<int64_t>(batch_size)) {
          throw std::invalid_argument("warm start: " + log.directory() + " holds " + std::to_string(report.unrolls) +
                                      " whole unrolls of " + std::to_string(config.learner.unroll) +
                                      " steps, fewer than one batch (learner.batch = " +
                                      std::to_string(batch_size) + ")");
        }
        log.rewind();
        continue;
      }
      ++report.unrolls;
      pending.push_back(std::move(unroll));
      if (pending.size() < batch_size) continue;
      UnrollBatch host = collate_unrolls(pending, store_.pool().shape(), false);
      pending.clear();
      const UnrollBatch batch = device_.is_cpu() ? std::move(host) : host.to(device_, /*non_blocking=*/false);
      set_learning_rate(*optimizer_, config.optimizer.lr);
      LossTerms loss = vtrace_loss(model_, batch, config.section<VTraceConfig>(), config.warm_start.bc_cost);
      optimizer_->zero_grad();
      loss.total.backward();
      if (!std::isfinite(clip_grad_norm(params_, config.optimizer.max_grad_norm))) continue;
      {
        base::WriterMutexLock weights(weights_mu_);
        optimizer_->step();
      }
      report.loss_last = loss.total.item<double>();
      report.bc_last = loss.bc;
      if (report.steps == 0) {
        report.loss_first = report.loss_last;
        report.bc_first = report.bc_last;
      }
      ++report.steps;
      if (progress) progress(report);
    }
    return report;
  }

  void set_gradient_hook(GradientHook hook) override { gradient_hook_ = std::move(hook); }

  bool await_batch_for(std::chrono::milliseconds wait) override {
    batch_ = prefetcher_->next_for(wait);
    return batch_.has_value();
  }

  bool closed() const override { return unrolls_.closed(); }

  TrainReport train_without_batch(const ExperimentConfig& config, double lr) override {
    TrainReport report;
    set_learning_rate(*optimizer_, lr);
    zero_gradients(params_);
    if (gradient_hook_) gradient_hook_(params_);
    report.grad_norm = clip_grad_norm(params_, config.optimizer.max_grad_norm);
    if (!std::isfinite(report.grad_norm)) return report;
    {
      base::WriterMutexLock weights(weights_mu_);
      optimizer_->step();
    }
    report.applied = true;
    return report;
  }

  uint64_t weights_hash() override {
    base::ReaderMutexLock weights(weights_mu_);
    return tensors_hash(params_);
  }

  void save(const std::string& path, const Counters& counters) override {
    save_checkpoint(path, *model_, *optimizer_, counters);
  }

  Counters restore(const std::string& path, const std::string& companions) override {
    (void)companions;  // none: the model and the optimizer are the whole checkpoint
    return load_checkpoint(path, *model_, *optimizer_);
  }

 private:
  bool is_eval(int slot) const {
    return static_cast<size_t>(slot) < eval_slot_.size() && eval_slot_[static_cast<size_t>(slot)];
  }

  // What a recurrent step of some slots was fed, on the CPU, for their unrolls.
  struct Recurrent {
    torch::Tensor index;                  // [n] int64: the slots
    torch::Tensor h, c;                   // [n, H]: their states, zeroed where an episode starts
    torch::Tensor prev_action, prev_reward;
  };

  bool discrete() const { return spec_.action.kind == envs::SpaceKind::kDiscrete; }

  // One step of the recurrent policy for `slots`. The new states replace theirs once the
  // outputs are known to be finite.
  models::PolicyOutput recurrent_step(const std::vector<int64_t>& slots, const torch::Tensor& x, Recurrent& used) {
    std::vector<float> keep(slots.size());
    for (size_t k = 0; k < slots.size(); ++k) keep[k] = first_[static_cast<size_t>(slots[k])] ? 0.f : 1.f;
    used.index = torch::tensor(slots, torch::kInt64);
    const torch::Tensor index = used.index.to(device_);
    const torch::Tensor k = torch::tensor(keep).to(device_).unsqueeze(1);
    const models::PolicyNetImpl::State state{state_h_.index_select(0, index) * k, state_c_.index_select(0, index) * k};
    used.prev_action = prev_action_.index_select(0, used.index);
    used.prev_reward = prev_reward_.index_select(0, used.index);
    auto [policy, next] = model_->step(x, used.prev_action.to(device_), used.prev_reward.to(device_), state);
    check_finite(policy);
    state_h_.index_copy_(0, index, next.h);
    state_c_.index_copy_(0, index, next.c);
    used.h = state.h.to(torch::kCPU).contiguous();
    used.c = state.c.to(torch::kCPU).contiguous();
    return policy;
  }

  // `sampled` with the rows of evaluation slots replaced by the policy's mode.
  torch::Tensor with_greedy_eval_rows(const std::vector<int64_t>& slots, const models::PolicyOutput& policy,
                                      const torch::Tensor& sampled) const {
    std::vector<int64_t> rows;
    for (size_t k = 0; k < slots.size(); ++k) {
      if (is_eval(static_cast<int>(slots[k]))) rows.push_back(static_cast<int64_t>(k));
    }
    if (rows.empty()) return sampled;
    const torch::Tensor index = torch::tensor(rows, torch::kInt64).to(sampled.device());
    return sampled.index_copy(0, index, models::greedy(policy).index_select(0, index).to(sampled.dtype()));
  }

  const envs::EnvSpec spec_;
  const torch::Device device_;
  models::PolicyNet model_;
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
  GradientHook gradient_hook_;  // set before start; training thread
  std::vector<torch::Tensor> params_;
  // Shared: forward passes for acting; exclusive: the optimizer step, which
  // writes the parameters in place (the tensors, not a member, so no GUARDED_BY).
  base::SharedMutex weights_mu_;
  BoundedQueue<UnrollPtr> unrolls_;  // inference -> prefetcher
  const std::vector<bool> eval_slot_;  // evaluation envs' slots
  const bool eval_greedy_;
  UnrollStore store_;                // inference thread only: training envs' steps
  UnrollStore eval_store_;           // inference thread only: evaluation envs' steps, never trained on
  std::unique_ptr<Prefetcher> prefetcher_;
  std::optional<UnrollBatch> batch_;  // training thread: from await_batch() to train()
  std::atomic<ExperienceRecorder*> recorder_{nullptr};  // set before the threads start
  // Inference thread only: per slot, whether its latest observation started an episode, and
  // (recurrent policies) every slot's state [slots, H] on the device.
  std::vector<uint8_t> first_;
  torch::Tensor state_h_, state_c_;
  // Recurrent: each slot's previous action ([slots] int64, -1 for none; [slots, A] float) and
  // reward ([slots]), on the CPU: what its next step is fed.
  torch::Tensor prev_action_, prev_reward_;
};

std::unique_ptr<Agent> make(const ExperimentConfig& config, const envs::EnvSpec& spec, torch::Device device) {
  return std::make_unique<VtraceAgent>(config, spec, device);
}

std::string check_model(const ExperimentConfig& config, const envs::EnvSpec& spec) {
  try {
    models::PolicyNet net(config.model, spec);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

models::Exported export_net(const ExperimentConfig& config, const envs::EnvSpec& spec, const std::string& checkpoint,
                            models::ExportOrigin& origin) {
  models::PolicyNet net(config.model, spec);
  origin.step = load_checkpoint_model(checkpoint, *net).optimizer_steps;
  return models::export_policy_net(*net, config.model, spec, origin);
}

// vtrace.eval_greedy: the policy's mode, else sampled as in training.
EvalActing eval_acting(const ExperimentConfig& config) {
  const bool greedy = config.section<VTraceConfig>().eval_greedy;
  return EvalActing{greedy, greedy ? "greedy" : "sampled"};
}

const AgentRegistration kRegistration(
    "vtrace", {&make, &check_model, &export_net,
               "forward(obs) -> (logits, value), or (mean, value) for box actions;\n"
               "recurrent: forward(obs, prev_action, prev_reward, (h, c))\n"
               "           -> (logits or mean, value, (h, c))",
               &eval_acting});

}  // namespace
}  // namespace moonseed::engine
