#include "engine/learner/prefetcher.h"

#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>

#include "base/thread_name.h"

namespace moonseed::engine {

namespace {

void require_size(size_t actual, size_t expected, const char* field, size_t b) {
  if (actual != expected) {
    throw std::logic_error("collate_unrolls: unroll " + std::to_string(b) + " has " + field +
                           " of " + std::to_string(actual) + " entries, expected " +
                           std::to_string(expected));
  }
}

// Validates the arguments before any member (or the thread) exists.
size_t checked_capacity(int batch_size, size_t batch_capacity) {
  if (batch_size < 1 || batch_capacity < 1) {
    throw std::invalid_argument(
        "Prefetcher: need batch_size >= 1 and batch_capacity >= 1, got " +
        std::to_string(batch_size) + " and " + std::to_string(batch_capacity));
  }
  return batch_capacity;
}

}  // namespace

UnrollBatch collate_unrolls(const std::vector<UnrollPtr>& unrolls, const UnrollShape& shape,
                            bool pin_memory) {
  if (unrolls.empty()) throw std::invalid_argument("collate_unrolls: no unrolls");
  const int64_t B = static_cast<int64_t>(unrolls.size());
  const int64_t steps = shape.unroll_length + 1;
  const size_t obs_bytes = static_cast<size_t>(shape.observation_bytes());
  const size_t action_bytes = static_cast<size_t>(shape.action_bytes());
  for (size_t b = 0; b < unrolls.size(); ++b) {
    const Unroll& u = *unrolls[b];
    const size_t n = static_cast<size_t>(steps);
    require_size(u.observations.size(), n * obs_bytes, "observation bytes", b);
    require_size(u.actions.size(), n * action_bytes, "action bytes", b);
    require_size(u.behaviour_logp.size(), n, "behaviour_logp", b);
    require_size(u.rewards.size(), n, "rewards", b);
    require_size(u.terminated.size(), n, "terminated", b);
    require_size(u.truncated.size(), n, "truncated", b);
    require_size(u.valid.size(), n, "valid", b);
    require_size(u.policy_version.size(), n, "policy_version", b);
  }

  auto options = [&](torch::ScalarType type) {
    return torch::TensorOptions().dtype(type).pinned_memory(pin_memory);
  };
  std::vector<int64_t> obs_sizes = {steps, B};
  obs_sizes.insert(obs_sizes.end(), shape.observation_shape.begin(),
                   shape.observation_shape.end());
  const bool uint8_obs = shape.observation_dtype == envs::DType::kUInt8;
  const bool discrete = shape.action_kind == envs::SpaceKind::kDiscrete;

  UnrollBatch batch;
  batch.observations = torch::empty(obs_sizes, options(uint8_obs ? torch::kUInt8 : torch::kFloat32));
  batch.actions = discrete ? torch::empty({steps, B}, options(torch::kInt64))
                           : torch::empty({steps, B, shape.action_dim}, options(torch::kFloat32));
  batch.behaviour_logp = torch::empty({steps, B}, options(torch::kFloat32));
  batch.rewards = torch::empty({steps, B}, options(torch::kFloat32));
  batch.terminated = torch::empty({steps, B}, options(torch::kFloat32));
  batch.truncated = torch::empty({steps, B}, options(torch::kFloat32));
  batch.valid = torch::empty({steps, B}, options(torch::kFloat32));
  batch.policy_version = torch::empty({steps, B}, options(torch::kInt64));

  auto* obs = static_cast<uint8_t*>(batch.observations.data_ptr());
  auto* actions = static_cast<uint8_t*>(batch.actions.data_ptr());
  float* logp = batch.behaviour_logp.data_ptr<float>();
  float* rewards = batch.rewards.data_ptr<float>();
  float* terminated = batch.terminated.data_ptr<float>();
  float* truncated = batch.truncated.data_ptr<float>();
  float* valid = batch.valid.data_ptr<float>();
  int64_t* version = batch.policy_version.data_ptr<int64_t>();

  int64_t frames = 0;
  for (int64_t t = 0; t < steps; ++t) {
    for (int64_t b = 0; b < B; ++b) {
      const Unroll& u = *unrolls[static_cast<size_t>(b)];
      const size_t src = static_cast<size_t>(t);
      const size_t dst = static_cast<size_t>(t * B + b);
      std::memcpy(obs + dst * obs_bytes, u.observations.data() + src * obs_bytes, obs_bytes);
      // Unroll actions are already int64 / float32[A]: the bytes are the tensor's.
      std::memcpy(actions + dst * action_bytes, u.actions.data() + src * action_bytes,
                  action_bytes);
      logp[dst] = u.behaviour_logp[src];
      rewards[dst] = u.rewards[src];
      terminated[dst] = u.terminated[src] ? 1.f : 0.f;
      truncated[dst] = u.truncated[src] ? 1.f : 0.f;
      valid[dst] = u.valid[src] ? 1.f : 0.f;
      version[dst] = u.policy_version[src];
      if (t < shape.unroll_length && u.valid[src]) ++frames;
    }
  }
  batch.frames = frames;
  if (shape.state_size > 0) {
    const int64_t H = shape.state_size;
    // An unroll that carries no start (read back from an experience log, which keeps none)
    // starts from a zero state with no previous action (-1, or zeros) or reward.
    batch.start_h = torch::zeros({B, H}, options(torch::kFloat32));
    batch.start_c = torch::zeros({B, H}, options(torch::kFloat32));
    batch.start_prev_action = discrete ? torch::full({B}, -1, options(torch::kInt64))
                                       : torch::zeros({B, shape.action_dim}, options(torch::kFloat32));
    batch.start_prev_reward = torch::zeros({B}, options(torch::kFloat32));
    auto* prev = static_cast<uint8_t*>(batch.start_prev_action.data_ptr());
    for (int64_t b = 0; b < B; ++b) {
      const Unroll& u = *unrolls[static_cast<size_t>(b)];
      if (u.start_state.size() != static_cast<size_t>(2 * H) || u.start_prev_action.size() != action_bytes) continue;
      std::memcpy(batch.start_h.data_ptr<float>() + b * H, u.start_state.data(), static_cast<size_t>(H) * sizeof(float));
      std::memcpy(batch.start_c.data_ptr<float>() + b * H, u.start_state.data() + H,
                  static_cast<size_t>(H) * sizeof(float));
      std::memcpy(prev + b * action_bytes, u.start_prev_action.data(), action_bytes);
      batch.start_prev_reward.data_ptr<float>()[b] = u.start_prev_reward;
    }
  }
  return batch;
}

Prefetcher::Prefetcher(BoundedQueue<UnrollPtr>& unrolls, const UnrollShape& shape,
                       int batch_size, const torch::Device& device, size_t batch_capacity,
                       UnrollSink sink)
    : shape_(shape),
      batch_size_(batch_size),
      device_(device),
      unrolls_(unrolls),
      batches_(checked_capacity(batch_size, batch_capacity)),
      sink_(std::move(sink)),
      thread_([this] {
        base::set_thread_name("ms-prefetch");
        run();
      }) {}

Prefetcher::~Prefetcher() { stop(); }

void Prefetcher::stop() {
  unrolls_.close();
  batches_.close();
  if (thread_.joinable()) thread_.join();
}

void Prefetcher::hand_over(std::vector<UnrollPtr>& unrolls) {
  if (sink_) {
    for (UnrollPtr& unroll : unrolls) sink_(std::move(unroll));
  }
  unrolls.clear();
}

void Prefetcher::run() {
  const bool pin = device_.is_cuda();
  std::vector<UnrollPtr> pending;
  pending.reserve(static_cast<size_t>(batch_size_));
  try {
    while (std::optional<UnrollPtr> unroll = unrolls_.pop()) {
      pending.push_back(std::move(*unroll));
      if (pending.size() < static_cast<size_t>(batch_size_)) continue;
      UnrollBatch host = collate_unrolls(pending, shape_, pin);
      hand_over(pending);  // to the sink or back to the pool, before the device copy
      // Counted before the push so that a consumer holding the batch sees it counted.
      batches_made_.fetch_add(1);
      unrolls_collated_.fetch_add(batch_size_);
      frames_.fetch_add(host.frames);
      UnrollBatch batch =
          device_.is_cpu() ? std::move(host) : host.to(device_, /*non_blocking=*/true);
      if (!batches_.push(std::move(batch))) break;
    }
  } catch (...) {
    {
      base::MutexLock guard(error_mu_);
      error_ = std::current_exception();
    }
    unrolls_.close();
  }
  dropped_unrolls_.fetch_add(static_cast<int64_t>(pending.size()));
  try {
    hand_over(pending);
    if (sink_) {
      while (std::optional<UnrollPtr> unroll = unrolls_.try_pop()) sink_(std::move(*unroll));
    }
  } catch (...) {
    base::MutexLock guard(error_mu_);
    if (!error_) error_ = std::current_exception();
  }
  pending.clear();
  batches_.close();
}

std::optional<UnrollBatch> Prefetcher::next() {
  std::optional<UnrollBatch> batch = batches_.pop();
  if (!batch) {
    base::MutexLock guard(error_mu_);
    if (error_) std::rethrow_exception(error_);
  }
  return batch;
}

std::optional<UnrollBatch> Prefetcher::next_for(std::chrono::milliseconds timeout) {
  std::optional<UnrollBatch> batch = batches_.pop_for(timeout);
  if (!batch) {
    base::MutexLock guard(error_mu_);
    if (error_) std::rethrow_exception(error_);
  }
  return batch;
}

PrefetcherStats Prefetcher::stats() const {
  PrefetcherStats s;
  s.batches = batches_made_.load();
  s.unrolls = unrolls_collated_.load();
  s.frames = frames_.load();
  s.dropped_unrolls = dropped_unrolls_.load();
  return s;
}

}  // namespace moonseed::engine
