#include "engine/learner/unroll_store.h"

#include <chrono>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>

#include "base/check.h"
#include "envs/env.h"

namespace moonseed::engine {

namespace {

int64_t product(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

}  // namespace

int64_t UnrollShape::observation_bytes() const {
  const int64_t element = observation_dtype == envs::DType::kUInt8 ? 1 : 4;
  return product(observation_shape) * element;
}

int64_t UnrollShape::action_bytes() const {
  return action_kind == envs::SpaceKind::kDiscrete ? int64_t{8} : action_dim * 4;
}

UnrollShape UnrollShape::from_spec(const envs::EnvSpec& spec, int64_t unroll_length) {
  if (unroll_length < 1) {
    throw std::invalid_argument("UnrollShape: unroll length must be >= 1, got " +
                                std::to_string(unroll_length));
  }
  if (spec.observation.kind != envs::SpaceKind::kBox) {
    throw std::invalid_argument("UnrollShape: observations must be a box space, got " +
                                spec.describe());
  }
  if (spec.action.kind == envs::SpaceKind::kBox && spec.action.dtype != envs::DType::kFloat32) {
    throw std::invalid_argument("UnrollShape: box actions must be float32, got " +
                                spec.describe());
  }
  UnrollShape shape;
  shape.unroll_length = unroll_length;
  shape.observation_shape = spec.observation.shape;
  shape.observation_dtype = spec.observation.dtype;
  shape.action_kind = spec.action.kind;
  shape.action_dim = spec.action.kind == envs::SpaceKind::kBox ? product(spec.action.shape) : 1;
  return shape;
}

void UnrollReturner::operator()(Unroll* unroll) const { pool->release(unroll); }

UnrollPool::UnrollPool(const UnrollShape& shape) : shape_(shape) {}

std::shared_ptr<UnrollPool> UnrollPool::create(const UnrollShape& shape, int64_t initial) {
  if (shape.unroll_length < 1 || shape.observation_bytes() < 1 || shape.action_bytes() < 1) {
    throw std::invalid_argument(
        "UnrollPool: need T >= 1 and non-empty observations and actions, got T=" +
        std::to_string(shape.unroll_length) + " obs_bytes=" +
        std::to_string(shape.observation_bytes()) +
        " action_bytes=" + std::to_string(shape.action_bytes()));
  }
  std::shared_ptr<UnrollPool> pool(new UnrollPool(shape));
  base::MutexLock lock(pool->mu_);  // not shared yet; the lock costs nothing here
  pool->free_.reserve(static_cast<size_t>(initial));
  for (int64_t i = 0; i < initial; ++i) pool->free_.push_back(pool->allocate());
  pool->allocated_ = initial;
  return pool;
}

std::unique_ptr<Unroll> UnrollPool::allocate() const {
  const size_t steps = static_cast<size_t>(shape_.unroll_length + 1);
  auto unroll = std::make_unique<Unroll>();
  unroll->observations.assign(steps * static_cast<size_t>(shape_.observation_bytes()), 0);
  unroll->actions.assign(steps * static_cast<size_t>(shape_.action_bytes()), 0);
  unroll->behaviour_logp.assign(steps, 0.f);
  unroll->rewards.assign(steps, 0.f);
  unroll->env_rewards.assign(steps, 0.f);
  unroll->terminated.assign(steps, 0);
  unroll->truncated.assign(steps, 0);
  unroll->valid.assign(steps, 0);
  unroll->policy_version.assign(steps, 0);
  unroll->config_version.assign(steps, 0);
  unroll->episode_id.assign(steps, 0);
  unroll->episode_step.assign(steps, 0);
  unroll->obs_flags.assign(steps, 0);
  unroll->start_state.assign(2 * static_cast<size_t>(shape_.state_size), 0.f);
  unroll->start_prev_action.assign(shape_.state_size > 0 ? static_cast<size_t>(shape_.action_bytes()) : 0, 0);
  return unroll;
}

UnrollPtr UnrollPool::acquire() {
  std::unique_ptr<Unroll> unroll;
  {
    base::MutexLock guard(mu_);
    if (!free_.empty()) {
      unroll = std::move(free_.back());
      free_.pop_back();
    } else {
      ++allocated_;
    }
  }
  if (!unroll) unroll = allocate();
  return UnrollPtr(unroll.release(), UnrollReturner{shared_from_this()});
}

void UnrollPool::release(Unroll* unroll) {
  std::unique_ptr<Unroll> owned(unroll);
  owned->slot = -1;
  base::MutexLock guard(mu_);
  // free_ never holds more than allocated_, so after warm-up this never reallocates.
  free_.push_back(std::move(owned));
}

int64_t UnrollPool::allocated() const {
  base::MutexLock guard(mu_);
  return allocated_;
}

int64_t UnrollPool::available() const {
  base::MutexLock guard(mu_);
  return static_cast<int64_t>(free_.size());
}

UnrollStore::UnrollStore(int num_slots, std::shared_ptr<UnrollPool> pool)
    : pool_(std::move(pool)) {
  if (num_slots < 1 || !pool_) {
    throw std::invalid_argument("UnrollStore: need num_slots >= 1 and a pool, got num_slots=" +
                                std::to_string(num_slots));
  }
  obs_bytes_ = pool_->shape().observation_bytes();
  action_bytes_ = pool_->shape().action_bytes();
  T_ = pool_->shape().unroll_length;
  slots_.resize(static_cast<size_t>(num_slots));
  for (int i = 0; i < num_slots; ++i) {
    slots_[static_cast<size_t>(i)].unroll = pool_->acquire();
    slots_[static_cast<size_t>(i)].unroll->slot = i;
  }
  finished_.reserve(static_cast<size_t>(num_slots));
}

UnrollStore::Slot& UnrollStore::slot_at(int slot, const char* what) {
  base::require_index(slot, num_slots(), "UnrollStore::", what, ": slot");
  return slots_[static_cast<size_t>(slot)];
}

void UnrollStore::complete_step(int slot_id, Slot& s, float reward, float env_reward, uint8_t flags) {
  Unroll& u = *s.unroll;
  const size_t t = static_cast<size_t>(s.t);
  const bool terminated = (flags & envs::kTerminated) != 0;
  const bool truncated = (flags & envs::kTruncated) != 0;
  u.rewards[t] = reward;
  u.env_rewards[t] = env_reward;
  u.terminated[t] = terminated ? 1 : 0;
  u.truncated[t] = truncated ? 1 : 0;
  s.episode_return += reward;
  s.env_episode_return += env_reward;
  s.episode_length += 1;
  if (!terminated && !truncated) return;
  if (s.episode_seen) {
    finished_.push_back({slot_id, s.episode_return, s.episode_length, !terminated, s.env_episode_return});
    ++stats_.episodes;
  }
  s.episode_seen = false;
  s.episode_return = 0;
  s.env_episode_return = 0;
  s.episode_length = 0;
}

UnrollPtr UnrollStore::observe(int slot, const uint8_t* obs, float reward, uint8_t flags,
                               uint64_t config_version, std::optional<float> env_reward) {
  Slot& s = slot_at(slot, "observe");
  if (s.awaiting_action) {
    throw std::logic_error("UnrollStore::observe: slot " + std::to_string(slot) +
                           " observed twice without act() (step " + std::to_string(s.t) + ")");
  }
  ++stats_.observations;
  const bool first = (flags & envs::kFirst) != 0;
  if (s.t >= 0) {
    Unroll& u = *s.unroll;
    const size_t prev = static_cast<size_t>(s.t);
    if (!u.valid[prev]) {
      // The previous action answered a final observation and did nothing.
      u.rewards[prev] = 0.f;
      u.env_rewards[prev] = 0.f;
      u.terminated[prev] = 0;
      u.truncated[prev] = 0;
    } else if (first) {
      // Restarted without a final observation: nothing honest can close the
      // partial unroll, so it is dropped with its episode.
      ++stats_.interrupted_episodes;
      s.t = -1;
      s.episode_return = 0;
      s.env_episode_return = 0;
      s.episode_length = 0;
    } else {
      complete_step(slot, s, reward, env_reward.value_or(reward), flags);
    }
  }
  if (first) {
    s.episode_seen = true;
    s.episode_return = 0;
    s.env_episode_return = 0;
    s.episode_length = 0;
  }
  // A new episode for the log: one that starts here, or one whose start this
  // store never saw (the slot's first observation, or after an interruption).
  const bool after_final = s.t >= 0 && !s.unroll->valid[static_cast<size_t>(s.t)];
  if (first || s.episode_id < 0 || after_final) {
    s.episode_id = next_episode_id_++;
    s.episode_step = 0;
  } else {
    s.episode_step += 1;
  }

  Unroll& u = *s.unroll;
  const int64_t t = s.t + 1;
  const size_t ti = static_cast<size_t>(t);
  u.episode_id[ti] = s.episode_id;
  u.episode_step[ti] = s.episode_step;
  u.obs_flags[ti] = flags;
  std::memcpy(u.observations.data() + ti * static_cast<size_t>(obs_bytes_), obs,
              static_cast<size_t>(obs_bytes_));
  u.valid[ti] = (flags & (envs::kTerminated | envs::kTruncated)) ? 0 : 1;
  u.config_version[ti] = config_version;
  s.awaiting_action = true;
  if (t < T_) {
    s.t = t;
    return UnrollPtr();
  }

  // x_T arrived: step T keeps only x_T and valid_T (see the header).
  std::memset(u.actions.data() + ti * static_cast<size_t>(action_bytes_), 0,
              static_cast<size_t>(action_bytes_));
  u.behaviour_logp[ti] = 0.f;
  u.rewards[ti] = 0.f;
  u.env_rewards[ti] = 0.f;
  u.terminated[ti] = 0;
  u.truncated[ti] = 0;
  u.policy_version[ti] = 0;

  UnrollPtr next = pool_->acquire();
  next->slot = slot;
  std::memcpy(next->observations.data(), obs, static_cast<size_t>(obs_bytes_));
  next->valid[0] = u.valid[ti];
  next->config_version[0] = config_version;
  next->episode_id[0] = u.episode_id[ti];
  next->episode_step[0] = u.episode_step[ti];
  next->obs_flags[0] = u.obs_flags[ti];
  u.wall_time_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
  UnrollPtr done = std::move(s.unroll);
  s.unroll = std::move(next);
  s.t = 0;
  ++stats_.unrolls;
  return done;
}

void UnrollStore::act(int slot, const void* action, float behaviour_logp, int64_t policy_version,
                      const RecurrentInputs* recurrent) {
  Slot& s = slot_at(slot, "act");
  if (!s.awaiting_action) {
    throw std::logic_error("UnrollStore::act: slot " + std::to_string(slot) +
                           " has no observation waiting for an action (step " +
                           std::to_string(s.t) + ")");
  }
  Unroll& u = *s.unroll;
  const size_t t = static_cast<size_t>(s.t);
  std::memcpy(u.actions.data() + t * static_cast<size_t>(action_bytes_), action,
              static_cast<size_t>(action_bytes_));
  u.behaviour_logp[t] = behaviour_logp;
  u.policy_version[t] = policy_version;
  const size_t H = static_cast<size_t>(pool_->shape().state_size);
  if (t == 0 && H > 0 && recurrent != nullptr) {
    std::memcpy(u.start_state.data(), recurrent->h, H * sizeof(float));
    std::memcpy(u.start_state.data() + H, recurrent->c, H * sizeof(float));
    std::memcpy(u.start_prev_action.data(), recurrent->prev_action, u.start_prev_action.size());
    u.start_prev_reward = recurrent->prev_reward;
  }
  s.awaiting_action = false;
}

void UnrollStore::reset_slot(int slot) {
  Slot& s = slot_at(slot, "reset_slot");
  s.t = -1;
  s.episode_id = -1;
  s.awaiting_action = false;
  s.episode_seen = false;
  s.episode_return = 0;
  s.env_episode_return = 0;
  s.episode_length = 0;
}

void UnrollStore::set_next_episode_id(int64_t id) {
  if (stats_.observations > 0) {
    throw std::logic_error("UnrollStore::set_next_episode_id must come before the first observe()");
  }
  next_episode_id_ = id;
}

void UnrollStore::take_finished_episodes(std::vector<EpisodeResult>& out) {
  out.insert(out.end(), finished_.begin(), finished_.end());
  finished_.clear();
}

}  // namespace moonseed::engine
