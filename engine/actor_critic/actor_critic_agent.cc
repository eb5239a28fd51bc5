#include "engine/actor_critic/actor_critic_agent.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "engine/learner/checkpoint.h"
#include "engine/learner/optimizer.h"
#include "engine/learner/weights_hash.h"
#include "envs/env.h"
#include "models/action_dist.h"

namespace moonseed::engine {
namespace {

// Throws NonFiniteOutputs when a row of `policy` is not a distribution one can sample from.
void check_finite(const models::PolicyOutput& policy) {
  torch::Tensor outputs = policy.logits_or_mean;
  if (policy.log_std.defined()) outputs = torch::cat({outputs, policy.log_std}, 1);
  if (torch::isfinite(outputs).all().item<bool>()) return;
  throw NonFiniteOutputs(nonfinite_rows(outputs));
}

class ActorCriticEvalPolicy : public EvalPolicy {
 public:
  ActorCriticEvalPolicy(models::PolicyNet model, base::SharedMutex& weights, torch::Device device, bool greedy,
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

}  // namespace

ActorCriticAgent::ActorCriticAgent(const ExperimentConfig& config, const envs::EnvSpec& spec, torch::Device device,
                                   bool eval_greedy)
    : spec_(spec),
      device_(device),
      model_(config.model, spec),
      unrolls_(static_cast<size_t>(config.learner.queue_capacity)),
      eval_slot_(evaluation_slots(config)),
      eval_greedy_(eval_greedy),
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

ActorCriticAgent::~ActorCriticAgent() { close(); }

bool ActorCriticAgent::wait_for_room() { return !unrolls_.closed(); }

void ActorCriticAgent::observe(int slot, const uint8_t* obs, float reward, uint8_t flags, uint64_t config_version,
                               float env_reward) {
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

torch::Tensor ActorCriticAgent::act(const std::vector<int64_t>& slots, const torch::Tensor& obs, int64_t version) {
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

void ActorCriticAgent::reset_slot(int slot) {
  (is_eval(slot) ? eval_store_ : store_).reset_slot(slot);
  if (model_->recurrent()) {
    torch::NoGradGuard no_grad;
    state_h_[slot].zero_();
    state_c_[slot].zero_();
    prev_action_[slot].fill_(discrete() ? -1 : 0);
    prev_reward_[slot].fill_(0);
  }
}

void ActorCriticAgent::take_finished_episodes(std::vector<EpisodeResult>& out) {
  store_.take_finished_episodes(out);
  eval_store_.take_finished_episodes(out);
}

bool ActorCriticAgent::await_batch() {
  batch_ = prefetcher_->next();
  return batch_.has_value();
}

bool ActorCriticAgent::await_batch_for(std::chrono::milliseconds wait) {
  batch_ = prefetcher_->next_for(wait);
  return batch_.has_value();
}

TrainReport ActorCriticAgent::train(const ExperimentConfig& config, double lr, int64_t version) {
  set_learning_rate(*optimizer_, lr);
  TrainReport report = update(*batch_, config, version);
  if (report.applied) report.frames = batch_->frames;
  return report;
}

TrainReport ActorCriticAgent::train_without_batch(const ExperimentConfig& config, double lr) {
  TrainReport report;
  set_learning_rate(*optimizer_, lr);
  report.applied = true;
  for (int64_t step = 0; step < optimizer_steps_per_batch(config); ++step) {
    zero_gradients(params_);
    report.grad_norm = apply_gradients(config);
    report.applied = report.applied && std::isfinite(report.grad_norm);
  }
  return report;
}

double ActorCriticAgent::apply_gradients(const ExperimentConfig& config) {
  if (gradient_hook_) gradient_hook_(params_);
  return clip_and_step(config);
}

double ActorCriticAgent::clip_and_step(const ExperimentConfig& config) {
  const double norm = clip_grad_norm(params_, config.optimizer.max_grad_norm);
  if (!std::isfinite(norm)) return norm;
  base::WriterMutexLock weights(weights_mu_);
  optimizer_->step();
  return norm;
}

double ActorCriticAgent::policy_lag(const UnrollBatch& batch, int64_t version) {
  // Step T carries no action (it is step 0 of the next unroll): leave it out.
  return static_cast<double>(version) -
         batch.policy_version.narrow(0, 0, batch.T()).to(torch::kFloat64).mean().item<double>();
}

int64_t ActorCriticAgent::unroll_length() const { return store_.pool().shape().unroll_length; }

void ActorCriticAgent::close() {
  unrolls_.close();  // unblocks an inference thread held by backpressure
  prefetcher_->stop();
}

bool ActorCriticAgent::closed() const { return unrolls_.closed(); }

bool ActorCriticAgent::weights_finite() {
  torch::NoGradGuard no_grad;
  base::ReaderMutexLock weights(weights_mu_);
  return all_finite(params_);
}

AgentStats ActorCriticAgent::stats() const {
  AgentStats s;
  s.queue_size = static_cast<int64_t>(unrolls_.size());
  return s;
}

std::unique_ptr<EvalPolicy> ActorCriticAgent::evaluation_policy(int, bool greedy, uint64_t) {
  return std::make_unique<ActorCriticEvalPolicy>(model_, weights_mu_, device_, greedy, discrete());
}

void ActorCriticAgent::set_recorder(ExperienceRecorder* recorder, int64_t next_episode_id) {
  store_.set_next_episode_id(next_episode_id);
  recorder_.store(recorder);
}

WarmStartReport ActorCriticAgent::warm_start(LogUnrolls& log, const ExperimentConfig& config,
                                             const std::function<void(const WarmStartReport&)>& progress) {
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
                                    " steps, fewer than one batch (learner.batch = " + std::to_string(batch_size) +
                                    ")");
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
    WarmStartLoss loss = warm_start_loss(batch, config);
    optimizer_->zero_grad();
    loss.total.backward();
    if (!std::isfinite(clip_and_step(config))) continue;  // a warm start runs alone: no gradient hook
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

void ActorCriticAgent::set_gradient_hook(GradientHook hook) { gradient_hook_ = std::move(hook); }

uint64_t ActorCriticAgent::weights_hash() {
  base::ReaderMutexLock weights(weights_mu_);
  return tensors_hash(params_);
}

void ActorCriticAgent::save(const std::string& path, const Counters& counters) {
  save_checkpoint(path, *model_, *optimizer_, counters);
}

Counters ActorCriticAgent::restore(const std::string& path, const std::string& companions) {
  (void)companions;  // none: the model and the optimizer are the whole checkpoint
  return load_checkpoint(path, *model_, *optimizer_);
}

// One step of the recurrent policy for `slots`. The new states replace theirs once the
// outputs are known to be finite.
models::PolicyOutput ActorCriticAgent::recurrent_step(const std::vector<int64_t>& slots, const torch::Tensor& x,
                                                      Recurrent& used) {
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
torch::Tensor ActorCriticAgent::with_greedy_eval_rows(const std::vector<int64_t>& slots,
                                                      const models::PolicyOutput& policy,
                                                      const torch::Tensor& sampled) const {
  std::vector<int64_t> rows;
  for (size_t k = 0; k < slots.size(); ++k) {
    if (is_eval(static_cast<int>(slots[k]))) rows.push_back(static_cast<int64_t>(k));
  }
  if (rows.empty()) return sampled;
  const torch::Tensor index = torch::tensor(rows, torch::kInt64).to(sampled.device());
  return sampled.index_copy(0, index, models::greedy(policy).index_select(0, index).to(sampled.dtype()));
}

std::string actor_critic_check_model(const ExperimentConfig& config, const envs::EnvSpec& spec) {
  try {
    models::PolicyNet net(config.model, spec);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

models::Exported actor_critic_export(const ExperimentConfig& config, const envs::EnvSpec& spec,
                                     const std::string& checkpoint, models::ExportOrigin& origin) {
  models::PolicyNet net(config.model, spec);
  origin.step = load_checkpoint_model(checkpoint, *net).optimizer_steps;
  origin.algo = config.algo;
  return models::export_policy_net(*net, config.model, spec, origin);
}

const char* const kActorCriticExportSignature =
    "forward(obs) -> (logits, value), or (mean, value) for box actions;\n"
    "recurrent: forward(obs, prev_action, prev_reward, (h, c))\n"
    "           -> (logits or mean, value, (h, c))";

}  // namespace moonseed::engine
