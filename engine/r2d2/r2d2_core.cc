#include "engine/r2d2/r2d2_core.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>

#include "base/text.h"
#include "engine/learner/optimizer.h"
#include "engine/r2d2/config/r2d2_config.h"

namespace moonseed::engine {
models::QNetSpec r2d2_net_spec(const ExperimentConfig& config) {
  models::QNetSpec spec = models::qnet_spec(config.model);
  spec.head_hidden = config.section<R2d2Config>().head_hidden;
  spec.dueling = config.section<R2d2Config>().dueling;
  spec.prev_action_reward = config.section<R2d2Config>().prev_action_reward;
  return spec;
}

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Runs `f`, adds its wall time to `total` (seconds) and returns its result.
template <typename F>
auto timed(double& total, F&& f) {
  const auto start = std::chrono::steady_clock::now();
  auto result = f();
  total += seconds_since(start);
  return result;
}

bool is_eval(const R2d2CoreConfig& c, int slot) {
  return static_cast<size_t>(slot) < c.eval_slots.size() && c.eval_slots[static_cast<size_t>(slot)];
}

// Ape-X's epsilons over the training slots in order; eval_epsilon for the others.
std::vector<double> slot_epsilons(const R2d2CoreConfig& c, int num_slots) {
  if (c.eval_slots.size() > static_cast<size_t>(num_slots)) {
    throw std::invalid_argument("R2d2Core: eval_slots has " + std::to_string(c.eval_slots.size()) +
                                " entries for " + std::to_string(num_slots) + " slots");
  }
  int training = 0;
  for (int s = 0; s < num_slots; ++s) training += is_eval(c, s) ? 0 : 1;
  if (training == 0) throw std::invalid_argument("R2d2Core: every slot is an evaluation slot; none feeds the replay");
  std::vector<double> out(static_cast<size_t>(num_slots));
  int i = 0;
  for (int s = 0; s < num_slots; ++s) {
    out[static_cast<size_t>(s)] =
        is_eval(c, s) ? c.eval_epsilon : ape_x_epsilon(i++, training, c.epsilon_base, c.epsilon_alpha);
  }
  return out;
}

// The replay's config with the sizes that follow from the trainer and the slots:
// sequences of burn_in + trace steps, and room in the block ring for every slot
// plus as many queued sequences.
SequenceReplayConfig replay_config(const R2d2CoreConfig& c, int num_slots) {
  SequenceReplayConfig r = c.replay;
  r.sequence_length = c.trainer.burn_in + c.trainer.trace;
  r.max_streams = 2 * static_cast<int64_t>(num_slots);
  return r;
}

models::QNet make_online(const R2d2CoreConfig& c, const envs::EnvSpec& env, torch::Device device) {
  torch::manual_seed(c.seed);
  models::QNet net(c.net, env);
  net->to(device);
  return net;
}

}  // namespace

R2d2Core::R2d2Core(const R2d2CoreConfig& config, const envs::EnvSpec& env, int num_slots, torch::Device device)
    : config_(config),
      device_(device),
      replay_(std::make_unique<SequenceReplay>(replay_config(config, num_slots), r2d2_step_columns(env),
                                               r2d2_start_columns(config.net.lstm), config.limiter)),
      acting_(slot_epsilons(config, num_slots), config.net.lstm, device,
              config.seed ^ 0x5DEECE66Dull),
      recorder_(num_slots, env, config.net.lstm, *replay_),
      max_queued_(num_slots) {
  if (config.batch < 1) throw std::invalid_argument("R2d2Core: batch must be >= 1, got " + std::to_string(config.batch));
  for (int s = 0; s < num_slots; ++s) {
    if (is_eval(config, s)) recorder_.set_recorded(s, false);
  }
  models::QNet online = make_online(config, env, device);
  optimizer_ = make_optimizer(config.optimizer, online->parameters());
  trainer_ = std::make_unique<R2d2Trainer>(config.trainer, online, *optimizer_, device);
}

R2d2Core::~R2d2Core() { close(); }

void R2d2Core::observe(int slot, const uint8_t* obs, float reward, uint8_t flags,
                       std::optional<float> env_reward) {
  recorder_.observe(slot, obs, reward, flags, env_reward);
}

torch::Tensor R2d2Core::act(const std::vector<int64_t>& slots, const torch::Tensor& obs,
                            std::vector<float>* behaviour_logp) {
  const int64_t n = static_cast<int64_t>(slots.size());
  torch::Tensor prev_action = torch::empty({n}, torch::kInt64);
  torch::Tensor prev_reward = torch::empty({n}, torch::kFloat32);
  torch::Tensor reset = torch::empty({n}, torch::kUInt8);
  for (int64_t i = 0; i < n; ++i) {
    const int slot = static_cast<int>(slots[static_cast<size_t>(i)]);
    prev_action.data_ptr<int64_t>()[i] = recorder_.prev_action(slot);
    prev_reward.data_ptr<float>()[i] = recorder_.prev_reward(slot);
    reset.data_ptr<uint8_t>()[i] = recorder_.reset(slot) ? 1 : 0;
  }
  ActingDecision d;
  {
    base::ReaderMutexLock weights(weights_mu_);
    d = acting_.act(*online(), slots, obs.to(device_), prev_action, prev_reward, reset);
  }
  const int64_t lstm = config_.net.lstm;
  const float* h = lstm > 0 ? d.h.data_ptr<float>() : nullptr;
  const float* c = lstm > 0 ? d.c.data_ptr<float>() : nullptr;
  const int64_t* a = d.actions.data_ptr<int64_t>();
  const torch::Tensor q = d.q.contiguous();  // [n, A] CPU float
  const int64_t num_actions = q.size(1);
  for (int64_t i = 0; i < n; ++i) {
    const float* row = q.data_ptr<float>() + i * num_actions;
    recorder_.act(static_cast<int>(slots[static_cast<size_t>(i)]), a[i], h ? h + i * lstm : nullptr,
                  c ? c + i * lstm : nullptr, row[a[i]], *std::max_element(row, row + num_actions));
  }
  std::vector<RecordedSequence> completed;
  recorder_.take_sequences(completed);
  if (!completed.empty()) {
    base::MutexLock lock(queue_mu_);
    for (auto& seq : completed) queued_.push_back(std::move(seq));
  }
  base::MutexLock lock(stats_mu_);
  stats_.sequences_queued += static_cast<int64_t>(completed.size());
  stats_.explored_actions += d.explored;
  if (behaviour_logp) *behaviour_logp = std::move(d.behaviour_logp);
  return d.actions;
}

void R2d2Core::set_exploration(double epsilon_base, double epsilon_alpha) {
  if (!(epsilon_base >= 0 && epsilon_base <= 1) || !(epsilon_alpha >= 0)) {
    throw std::invalid_argument("R2d2Core::set_exploration: needs epsilon_base in [0, 1] and epsilon_alpha >= 0, got " +
                                base::number_text(epsilon_base) + " and " + base::number_text(epsilon_alpha));
  }
  R2d2CoreConfig c = config_;
  c.epsilon_base = epsilon_base;
  c.epsilon_alpha = epsilon_alpha;
  const std::vector<double> epsilons = slot_epsilons(c, acting_.num_slots());
  for (int s = 0; s < acting_.num_slots(); ++s) acting_.set_epsilon(s, epsilons[static_cast<size_t>(s)]);
}

void R2d2Core::reset_slot(int slot) {
  recorder_.reset_slot(slot);
  acting_.reset_slot(slot);
}

void R2d2Core::take_finished_episodes(std::vector<EpisodeResult>& out) { recorder_.take_finished_episodes(out); }

bool R2d2Core::wait_for_room(std::chrono::milliseconds timeout) {
  {
    base::MutexLock lock(queue_mu_);
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!closed_ && static_cast<int64_t>(queued_.size()) >= max_queued_) {
      if (queue_cv_.wait_until(lock, deadline) == std::cv_status::timeout) break;
    }
    if (closed_ || static_cast<int64_t>(queued_.size()) >= max_queued_) return false;
  }
  return replay_->await_insert(timeout);
}

int64_t R2d2Core::prefill(int slot, const uint8_t* obs, float reward, uint8_t flags, int64_t action) {
  recorder_.observe(slot, obs, reward, flags);
  const std::vector<float> zeros(static_cast<size_t>(std::max<int64_t>(config_.net.lstm, 1)), 0.f);
  const float none = std::numeric_limits<float>::quiet_NaN();  // no net acted: learner priorities
  recorder_.act(slot, action, zeros.data(), zeros.data(), none, none);
  std::vector<RecordedSequence> completed;
  recorder_.take_sequences(completed);
  int64_t queued = 0;
  {
    base::MutexLock lock(queue_mu_);
    for (auto& seq : completed) queued_.push_back(std::move(seq));
    queued = static_cast<int64_t>(queued_.size());
  }
  base::MutexLock lock(stats_mu_);
  stats_.sequences_queued += static_cast<int64_t>(completed.size());
  return queued;
}

int64_t R2d2Core::insert_prefilled() {
  insert_queued();
  return replay_->size();
}

void R2d2Core::insert_queued() {
  std::vector<RecordedSequence> batch;
  {
    base::MutexLock lock(queue_mu_);
    batch.swap(queued_);
  }
  queue_cv_.notify_all();
  const auto start = std::chrono::steady_clock::now();
  double network = 0;  // the nets' share of the insertion: priorities
  int64_t inserted = 0;
  int64_t rejected = 0;
  // First the sequences the acting net gave values to, with priorities from
  // those (insert() itself refuses one whose blocks the ring overwrote
  // meanwhile); the rest, from `learned` on, get the learner's nets' priorities.
  const auto learned = config_.acting_priorities
                           ? std::stable_partition(batch.begin(), batch.end(),
                                                   [](const RecordedSequence& s) { return has_acting_values(s.steps); })
                           : batch.begin();
  std::vector<const std::vector<ActingStep>*> steps;
  for (auto it = batch.begin(); it != learned; ++it) steps.push_back(&it->steps);
  if (!steps.empty()) {
    const std::vector<double> priorities = timed(network, [&] { return trainer_->acting_priorities(steps); });
    for (size_t i = 0; i < steps.size(); ++i) {
      if (replay_->insert(batch[i].blocks, priorities[i])) ++inserted; else ++rejected;
    }
  }
  for (size_t begin = static_cast<size_t>(learned - batch.begin()); begin < batch.size();
       begin += static_cast<size_t>(config_.batch)) {
    const size_t end = std::min(batch.size(), begin + static_cast<size_t>(config_.batch));
    std::vector<std::vector<BlockRef>> chunk;
    for (size_t i = begin; i < end; ++i) chunk.push_back(batch[i].blocks);
    // gather() refuses a sequence whose block the ring overwrote since it was
    // assembled; then gather one by one so only those are lost. Errors of the
    // nets are not caught here: they are bugs, not stale blocks.
    std::optional<SequenceBatch> gathered;
    try {
      gathered = replay_->gather(chunk);
    } catch (const std::invalid_argument&) {
      for (const auto& seq : chunk) {
        std::optional<SequenceBatch> one;
        try {
          one = replay_->gather({seq});
        } catch (const std::invalid_argument&) {
          ++rejected;
          continue;
        }
        const double priority = timed(network, [&] { return trainer_->priorities(*one).front(); });
        if (replay_->insert(seq, priority)) ++inserted; else ++rejected;
      }
      continue;
    }
    const std::vector<double> priorities = timed(network, [&] { return trainer_->priorities(*gathered); });
    for (size_t i = 0; i < chunk.size(); ++i) {
      if (replay_->insert(chunk[i], priorities[i])) ++inserted; else ++rejected;
    }
  }
  const double total = seconds_since(start);
  base::MutexLock lock(stats_mu_);
  stats_.sequences_inserted += inserted;
  stats_.sequences_rejected += rejected;
  stats_.network_seconds += network;
  stats_.replay_seconds += total - network;
}

std::optional<R2d2StepStats> R2d2Core::train_step(std::chrono::milliseconds wait) {
  if (!ready_to_learn(wait)) return std::nullopt;
  return learn();
}

bool R2d2Core::ready_to_learn(std::chrono::milliseconds wait) {
  insert_queued();
  return replay_->await_sample(config_.batch, wait);
}

R2d2StepStats R2d2Core::learn() {
  double replay = 0;
  double network = 0;
  SampledBatch sample = timed(replay, [&] { return replay_->sample(config_.batch); });
  std::vector<double> priorities;
  R2d2StepStats step = timed(network, [&] {
    R2d2StepStats s = trainer_->learn(sample, &priorities);
    base::WriterMutexLock weights(weights_mu_);
    trainer_->apply();
    return s;
  });
  if (!step.skipped) {
    const auto start = std::chrono::steady_clock::now();
    replay_->update_priorities(sample.keys, priorities);
    replay += seconds_since(start);
  }
  base::MutexLock lock(stats_mu_);
  stats_.replay_seconds += replay;
  stats_.network_seconds += network;
  stats_.learning_steps = trainer_->steps();
  stats_.last = step;
  return step;
}

R2d2StepStats R2d2Core::learn_without_batch() {
  R2d2StepStats step = trainer_->learn_without_batch();
  {
    base::WriterMutexLock weights(weights_mu_);
    trainer_->apply();
  }
  base::MutexLock lock(stats_mu_);
  stats_.learning_steps = trainer_->steps();
  return step;
}

void R2d2Core::set_hot(double gamma, double max_grad_norm) { trainer_->set_hot(gamma, max_grad_norm); }

void R2d2Core::set_learning_steps(int64_t steps) {
  trainer_->set_steps(steps);
  base::MutexLock lock(stats_mu_);
  stats_.learning_steps = steps;
}

void R2d2Core::set_learning_rate(double lr) { engine::set_learning_rate(*optimizer_, lr); }

void R2d2Core::close() {
  {
    base::MutexLock lock(queue_mu_);
    closed_ = true;
  }
  queue_cv_.notify_all();
  replay_->rate_limiter().cancel();
}

R2d2CoreStats R2d2Core::stats() const {
  base::MutexLock lock(stats_mu_);
  R2d2CoreStats s = stats_;
  s.replay_size = replay_->size();
  return s;
}

}  // namespace moonseed::engine
