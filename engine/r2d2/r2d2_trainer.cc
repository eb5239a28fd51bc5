#include "engine/r2d2/r2d2_trainer.h"

#include <cmath>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

#include "base/text.h"
#include "engine/learner/optimizer.h"

namespace moonseed::engine {
namespace {

// The step column `name` of `batch`, checked to be [L, B, ...], on `device`.
torch::Tensor column(const SequenceBatch& batch, const char* name, int64_t L, torch::Device device) {
  const auto it = batch.steps.find(name);
  if (it == batch.steps.end()) {
    throw std::invalid_argument(std::string("R2d2Trainer: the batch has no step column '") + name + "'");
  }
  const torch::Tensor& t = it->second;
  if (t.dim() < 2 || t.size(0) != L) {
    std::ostringstream os;
    os << "R2d2Trainer: step column '" << name << "' must be [" << L << ", B, ...] (burn_in + trace), got "
       << t.sizes();
    throw std::invalid_argument(os.str());
  }
  return t.to(device);
}

}  // namespace

void validate(const R2d2TrainerConfig& c) {
  auto fail = [](const std::string& what) { throw std::invalid_argument("R2d2TrainerConfig: " + what); };
  if (c.burn_in < 0) fail("burn_in must be >= 0, got " + std::to_string(c.burn_in));
  if (c.trace < 2) fail("trace must be >= 2 (the last step only bootstraps), got " + std::to_string(c.trace));
  if (c.target_period < 1) fail("target_period must be >= 1, got " + std::to_string(c.target_period));
  if (!(c.eta >= 0 && c.eta <= 1)) fail("eta must be in [0, 1], got " + base::number_text(c.eta));
  if (!(c.max_grad_norm >= 0) || !std::isfinite(c.max_grad_norm)) {
    fail("max_grad_norm must be finite and >= 0, got " + base::number_text(c.max_grad_norm));
  }
  if (c.n_step.n < 1) fail("n_step.n must be >= 1, got " + std::to_string(c.n_step.n));
  if (!(c.n_step.gamma >= 0 && c.n_step.gamma <= 1)) {
    fail("n_step.gamma must be in [0, 1], got " + base::number_text(c.n_step.gamma));
  }
  if (!(c.n_step.eps > 0)) fail("n_step.eps must be > 0, got " + base::number_text(c.n_step.eps));
}

std::vector<ColumnSpec> r2d2_step_columns(const envs::EnvSpec& env) {
  const torch::Dtype obs = env.observation.dtype == envs::DType::kUInt8 ? torch::kUInt8 : torch::kFloat32;
  return {
      {"obs", obs, env.observation.shape},
      {"action", torch::kInt64, {}},
      {"reward", torch::kFloat32, {}},
      {"terminated", torch::kUInt8, {}},
      {"truncated", torch::kUInt8, {}},
      {"valid", torch::kUInt8, {}},
      {"reset", torch::kUInt8, {}},
      {"prev_action", torch::kInt64, {}},
      {"prev_reward", torch::kFloat32, {}},
  };
}

std::vector<ColumnSpec> r2d2_start_columns(int64_t lstm) {
  if (lstm <= 0) return {};
  return {{"h", torch::kFloat32, {lstm}}, {"c", torch::kFloat32, {lstm}}};
}

R2d2Trainer::R2d2Trainer(const R2d2TrainerConfig& config, models::QNet online,
                         torch::optim::Optimizer& optimizer, torch::Device device)
    : config_(config), online_(std::move(online)), optimizer_(optimizer), device_(device) {
  validate(config_);
  online_->to(device_);
  target_ = online_->clone_net();
  for (auto& p : target_->parameters()) p.set_requires_grad(false);
  params_ = online_->parameters();
}

void R2d2Trainer::set_hot(double gamma, double max_grad_norm) {
  R2d2TrainerConfig next = config_;
  next.n_step.gamma = gamma;
  next.max_grad_norm = max_grad_norm;
  validate(next);
  config_ = next;
}

R2d2Trainer::Forward R2d2Trainer::forward(const SequenceBatch& batch) {
  const int64_t L = config_.burn_in + config_.trace;
  const torch::Tensor obs = column(batch, "obs", L, device_);
  const torch::Tensor action = column(batch, "action", L, device_);
  const torch::Tensor reset = column(batch, "reset", L, device_).to(torch::kFloat32);
  const torch::Tensor prev_action = column(batch, "prev_action", L, device_);
  const torch::Tensor prev_reward = column(batch, "prev_reward", L, device_);
  models::QNetImpl::State start;
  if (online_->state_size() > 0) {
    for (const char* name : {"h", "c"}) {
      if (batch.starts.find(name) == batch.starts.end()) {
        throw std::invalid_argument(std::string("R2d2Trainer: the batch has no start column '") + name +
                                    "' for the recurrent net");
      }
    }
    // Copies on the device: the batch's (and the replay's) tensors stay as stored.
    start.h = batch.starts.at("h").to(device_, /*non_blocking=*/false, /*copy=*/true);
    start.c = batch.starts.at("c").to(device_, /*non_blocking=*/false, /*copy=*/true);
  }

  const int64_t burn = config_.burn_in;
  const int64_t T = config_.trace;
  auto part = [](const torch::Tensor& t, int64_t begin, int64_t length) { return t.narrow(0, begin, length); };

  models::QNetImpl::State online_state = start;
  models::QNetImpl::State target_state = start;
  if (burn > 0) {
    torch::NoGradGuard no_grad;
    online_state = online_->unroll(part(obs, 0, burn), part(prev_action, 0, burn), part(prev_reward, 0, burn),
                                   part(reset, 0, burn), start).second;
    target_state = target_->unroll(part(obs, 0, burn), part(prev_action, 0, burn), part(prev_reward, 0, burn),
                                   part(reset, 0, burn), start).second;
  }

  const torch::Tensor q_online = online_->unroll(part(obs, burn, T), part(prev_action, burn, T),
                                                 part(prev_reward, burn, T), part(reset, burn, T), online_state)
                                     .first;  // [T, B, A]
  torch::Tensor q_target;
  {
    torch::NoGradGuard no_grad;
    q_target = target_->unroll(part(obs, burn, T), part(prev_action, burn, T), part(prev_reward, burn, T),
                               part(reset, burn, T), target_state)
                   .first;
  }

  Forward out;
  out.q_taken = q_online.gather(2, part(action, burn, T).unsqueeze(2)).squeeze(2);  // [T, B]
  torch::NoGradGuard no_grad;
  const torch::Tensor greedy = q_online.detach().argmax(2, /*keepdim=*/true);
  NStepInput in;
  in.rewards = part(column(batch, "reward", L, device_), burn, T).to(torch::kFloat32);
  in.terminated = part(column(batch, "terminated", L, device_), burn, T).to(torch::kFloat32);
  in.truncated = part(column(batch, "truncated", L, device_), burn, T).to(torch::kFloat32);
  in.valid = part(column(batch, "valid", L, device_), burn, T).to(torch::kFloat32);
  in.bootstrap_q = q_target.gather(2, greedy).squeeze(2).to(torch::kFloat32);
  NStepTargets targets = n_step_targets(in, config_.n_step);
  out.targets = targets.targets;
  out.mask = targets.mask;
  return out;
}

R2d2StepStats R2d2Trainer::learn(const SampledBatch& sampled, std::vector<double>* priorities) {
  online_->train();
  Forward f = forward(sampled.batch);
  const int64_t B = f.q_taken.size(1);
  if (static_cast<int64_t>(sampled.weights.size()) != B) {
    throw std::invalid_argument("R2d2Trainer::learn: " + std::to_string(sampled.weights.size()) +
                                " importance weights for " + std::to_string(B) + " sequences");
  }
  const torch::Tensor weights =
      torch::tensor(sampled.weights, torch::dtype(torch::kFloat64)).to(device_, f.q_taken.scalar_type());
  TdInput td{f.targets, f.q_taken, f.mask, /*burn_in=*/0};
  const torch::Tensor loss = r2d2_loss(td, weights);

  optimizer_.zero_grad();
  loss.backward();
  if (gradient_hook_) gradient_hook_(params_);
  R2d2StepStats stats;
  stats.loss = loss.item<double>();
  stats.grad_norm = clip_grad_norm(params_, config_.max_grad_norm);
  stats.skipped = !std::isfinite(stats.grad_norm);
  pending_ = !stats.skipped;

  const torch::Tensor p = sequence_priorities(td, config_.eta).to(torch::kCPU, torch::kFloat64).contiguous();
  if (priorities != nullptr) {
    priorities->assign(p.data_ptr<double>(), p.data_ptr<double>() + p.numel());
  }
  stats.mean_priority = p.mean().item<double>();
  const torch::Tensor steps = f.mask.sum();
  stats.mean_q = steps.item<double>() > 0 ? ((f.q_taken.detach() * f.mask).sum() / steps).item<double>() : 0.0;
  return stats;
}

R2d2StepStats R2d2Trainer::learn_without_batch() {
  zero_gradients(params_);
  if (gradient_hook_) gradient_hook_(params_);
  R2d2StepStats stats;
  stats.grad_norm = clip_grad_norm(params_, config_.max_grad_norm);
  stats.skipped = !std::isfinite(stats.grad_norm);
  pending_ = !stats.skipped;
  return stats;
}

void R2d2Trainer::apply() {
  if (!pending_) return;
  pending_ = false;
  optimizer_.step();
  steps_ += 1;
  if (steps_ % config_.target_period == 0) target_->copy_weights_from(*online_);
}

bool has_acting_values(const std::vector<ActingStep>& steps) {
  for (const ActingStep& s : steps) {
    if (!std::isfinite(s.q_taken) || !std::isfinite(s.q_greedy)) return false;
  }
  return true;
}

std::vector<double> R2d2Trainer::acting_priorities(const std::vector<const std::vector<ActingStep>*>& sequences) const {
  const int64_t L = config_.burn_in + config_.trace;
  const int64_t T = config_.trace;
  const int64_t B = static_cast<int64_t>(sequences.size());
  if (B == 0) return {};
  // The trace's steps, [T, B] each, in float as the learner's own targets are.
  torch::Tensor rewards = torch::empty({T, B}, torch::kFloat32);
  torch::Tensor terminated = torch::empty({T, B}, torch::kFloat32);
  torch::Tensor truncated = torch::empty({T, B}, torch::kFloat32);
  torch::Tensor valid = torch::empty({T, B}, torch::kFloat32);
  torch::Tensor q_taken = torch::empty({T, B}, torch::kFloat32);
  torch::Tensor q_greedy = torch::empty({T, B}, torch::kFloat32);
  auto r = rewards.accessor<float, 2>();
  auto te = terminated.accessor<float, 2>();
  auto tr = truncated.accessor<float, 2>();
  auto v = valid.accessor<float, 2>();
  auto qt = q_taken.accessor<float, 2>();
  auto qg = q_greedy.accessor<float, 2>();
  for (int64_t b = 0; b < B; ++b) {
    const std::vector<ActingStep>& steps = *sequences[static_cast<size_t>(b)];
    if (static_cast<int64_t>(steps.size()) != L) {
      throw std::invalid_argument("R2d2Trainer::acting_priorities: sequence " + std::to_string(b) + " has " +
                                  std::to_string(steps.size()) + " steps, not burn_in + trace = " +
                                  std::to_string(L));
    }
    for (int64_t t = 0; t < T; ++t) {
      const ActingStep& s = steps[static_cast<size_t>(config_.burn_in + t)];
      r[t][b] = s.reward;
      te[t][b] = s.terminated;
      tr[t][b] = s.truncated;
      v[t][b] = s.valid;
      qt[t][b] = s.q_taken;
      qg[t][b] = s.q_greedy;
    }
  }
  const NStepTargets targets = n_step_targets({rewards, terminated, truncated, valid, q_greedy}, config_.n_step);
  const TdInput td{targets.targets, q_taken, targets.mask, /*burn_in=*/0};
  const torch::Tensor p = sequence_priorities(td, config_.eta).to(torch::kFloat64).contiguous();
  return std::vector<double>(p.data_ptr<double>(), p.data_ptr<double>() + p.numel());
}

std::vector<double> R2d2Trainer::priorities(const SequenceBatch& batch) {
  torch::NoGradGuard no_grad;
  Forward f = forward(batch);
  TdInput td{f.targets, f.q_taken, f.mask, /*burn_in=*/0};
  const torch::Tensor p = sequence_priorities(td, config_.eta).to(torch::kCPU, torch::kFloat64).contiguous();
  return std::vector<double>(p.data_ptr<double>(), p.data_ptr<double>() + p.numel());
}

}  // namespace moonseed::engine
