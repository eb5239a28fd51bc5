#include "envs/classic/classic_control_env.h"

#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>

#include "base/check.h"
#include "base/constants.h"

namespace moonseed::envs {

ClassicControlEnv::ClassicControlEnv(EnvSpec spec, size_t physics_size)
    : spec_(std::move(spec)), physics_size_(physics_size) {
  if (spec_.observation.numel() > static_cast<int64_t>(kMaxElements) ||
      spec_.action.numel() > static_cast<int64_t>(ClassicAction{}.values.size())) {
    throw std::logic_error("ClassicControlEnv: " + spec_.describe() + " exceeds the buffers");
  }
}

void ClassicControlEnv::reset(std::optional<uint64_t> seed, void* obs) {
  reseed_on_reset(seed, rng_, rng_seeded_);
  reset_physics(rng_, obs_buffer_.data());
  elapsed_steps_ = 0;
  phase_ = Phase::kRunning;
  std::memcpy(obs, obs_buffer_.data(), static_cast<size_t>(spec_.observation.byte_size()));
}

StepResult ClassicControlEnv::step(const void* action, void* obs) {
  if (phase_ != Phase::kRunning) {
    throw std::logic_error(spec_.id + " step: " +
                           (phase_ == Phase::kNeverReset
                                ? std::string("called before the first reset()")
                                : "the episode ended after " + std::to_string(elapsed_steps_) +
                                      " steps; call reset() first"));
  }
  ClassicAction parsed;
  if (spec_.action.kind == SpaceKind::kDiscrete) {
    std::memcpy(&parsed.index, action, sizeof(parsed.index));
    base::require_index(parsed.index, spec_.action.n, spec_.id + " step: action");
  } else {
    std::memcpy(parsed.values.data(), action, static_cast<size_t>(spec_.action.byte_size()));
  }

  StepResult result = step_physics(parsed, obs_buffer_.data());
  ++elapsed_steps_;
  if (spec_.max_episode_steps > 0 && elapsed_steps_ >= spec_.max_episode_steps) {
    result.truncated = true;
  }
  if (result.terminated || result.truncated) phase_ = Phase::kEpisodeOver;
  std::memcpy(obs, obs_buffer_.data(), static_cast<size_t>(spec_.observation.byte_size()));
  return result;
}

std::vector<double> ClassicControlEnv::get_state() const {
  std::vector<double> state(physics_size_ + kBookkeepingSize);
  save_physics(state.data());
  double* book = state.data() + physics_size_;
  book[0] = static_cast<double>(elapsed_steps_);
  book[1] = static_cast<double>(static_cast<int>(phase_));
  book[2] = rng_seeded_ ? 1.0 : 0.0;
  save_generator_words(rng_, book + 3);
  return state;
}

void ClassicControlEnv::set_state(const std::vector<double>& state) {
  if (state.size() != physics_size_ + kBookkeepingSize) {
    throw std::invalid_argument(spec_.id + " set_state: expected " +
                                std::to_string(physics_size_ + kBookkeepingSize) +
                                " values, got " + std::to_string(state.size()));
  }
  const double* book = state.data() + physics_size_;
  const uint64_t elapsed = checked_state_word(book[0], base::kMaxExactInteger, "elapsed steps", spec_.id);
  const uint64_t phase = checked_state_word(book[1], 2.0, "phase", spec_.id);
  const uint64_t seeded = checked_state_word(book[2], 1.0, "generator seeded", spec_.id);
  const Pcg64 rng = load_generator_words(book + 3, spec_.id);  // throws before anything changed

  load_physics(state.data());
  rng_ = rng;
  rng_seeded_ = seeded == 1;
  elapsed_steps_ = static_cast<int64_t>(elapsed);
  phase_ = static_cast<Phase>(phase);
}

}  // namespace moonseed::envs
