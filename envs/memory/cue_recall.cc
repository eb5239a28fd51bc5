#include "envs/memory/cue_recall.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

#include "envs/step_checks.h"

namespace moonseed::envs {
namespace {

constexpr size_t kStateSize = 4 + 8;  // cue, elapsed, phase, seeded, generator words

void require_in_range(int value, int low, int high, const char* name) {
  if (value < low || value > high) {
    throw std::invalid_argument(std::string(CueRecall::kId) + ": " + name + " must be in [" +
                                std::to_string(low) + ", " + std::to_string(high) + "], got " +
                                std::to_string(value));
  }
}

// Checks the options before anything is sized by them.
EnvSpec cue_recall_spec(int delay, int cues, int max_episode_steps) {
  require_in_range(delay, 0, CueRecall::kMaxDelay, "delay");
  require_in_range(cues, CueRecall::kMinCues, CueRecall::kMaxCues, "cues");
  if (max_episode_steps < 0) {
    throw std::invalid_argument(std::string(CueRecall::kId) +
                                ": max_episode_steps must be >= 0, got " +
                                std::to_string(max_episode_steps));
  }
  const size_t size = static_cast<size_t>(cues) + 3;
  EnvSpec spec;
  spec.id = CueRecall::kId;
  spec.observation.kind = SpaceKind::kBox;
  spec.observation.dtype = DType::kFloat32;
  spec.observation.shape = {static_cast<int64_t>(size)};
  spec.observation.low.assign(size, 0.f);
  spec.observation.high.assign(size, 1.f);
  spec.action.kind = SpaceKind::kDiscrete;
  spec.action.n = cues;
  spec.max_episode_steps = max_episode_steps;
  return spec;
}

}  // namespace

CueRecall::CueRecall(int delay, int cues, int max_episode_steps)
    : delay_(delay), cues_(cues), spec_(cue_recall_spec(delay, cues, max_episode_steps)) {}

void CueRecall::reset(std::optional<uint64_t> seed, void* obs) {
  reseed_on_reset(seed, rng_, rng_seeded_);
  // next_double() < 1, and K * (1 - 2^-53) rounds below K for K <= 16; min() only documents it.
  cue_ = std::min(static_cast<int32_t>(rng_.next_double() * cues_), cues_ - 1);
  elapsed_steps_ = 0;
  phase_ = Phase::kRunning;
  observe(obs);
}

StepResult CueRecall::step(const void* action, void* obs) {
  require_running(kId, phase_ != Phase::kNeverReset, phase_ == Phase::kRunning, elapsed_steps_);
  const int32_t index = discrete_action(kId, action, cues_);
  StepResult result;
  ++elapsed_steps_;
  if (elapsed_steps_ == delay_ + 2) {  // this step answered the query
    result.reward = index == cue_ ? kCorrectReward : kWrongReward;
    result.terminated = true;
  }
  if (spec_.max_episode_steps > 0 && elapsed_steps_ >= spec_.max_episode_steps) {
    result.truncated = true;
  }
  if (result.terminated || result.truncated) phase_ = Phase::kEpisodeOver;
  observe(obs);
  return result;
}

void CueRecall::observe(void* obs) const {
  std::array<float, kMaxCues + 3> values{};
  if (elapsed_steps_ == 0) {
    values[static_cast<size_t>(cue_)] = 1.f;
    values[static_cast<size_t>(cues_)] = 1.f;
  } else if (elapsed_steps_ <= delay_) {
    values[static_cast<size_t>(cues_) + 1] = 1.f;
  } else if (elapsed_steps_ == delay_ + 1) {
    values[static_cast<size_t>(cues_) + 2] = 1.f;
  }
  std::memcpy(obs, values.data(), static_cast<size_t>(spec_.observation.byte_size()));
}

std::vector<double> CueRecall::get_state() const {
  std::vector<double> state(kStateSize);
  state[0] = static_cast<double>(cue_);
  state[1] = static_cast<double>(elapsed_steps_);
  state[2] = static_cast<double>(static_cast<int>(phase_));
  state[3] = rng_seeded_ ? 1.0 : 0.0;
  save_generator_words(rng_, state.data() + 4);
  return state;
}

void CueRecall::set_state(const std::vector<double>& state) {
  if (state.size() != kStateSize) {
    throw std::invalid_argument(std::string(kId) + " set_state: expected " +
                                std::to_string(kStateSize) + " values, got " +
                                std::to_string(state.size()));
  }
  const uint64_t cue = checked_state_word(state[0], cues_ - 1, "cue", kId);
  const uint64_t elapsed = checked_state_word(state[1], delay_ + 2, "elapsed steps", kId);
  const uint64_t phase = checked_state_word(state[2], 2.0, "phase", kId);
  const uint64_t seeded = checked_state_word(state[3], 1.0, "generator seeded", kId);
  if (phase == static_cast<uint64_t>(Phase::kRunning) &&
      (elapsed == static_cast<uint64_t>(delay_) + 2 ||
       (spec_.max_episode_steps > 0 &&
        elapsed >= static_cast<uint64_t>(spec_.max_episode_steps)))) {
    throw std::invalid_argument(std::string(kId) +
                                " set_state: an episode cannot be running after " +
                                std::to_string(elapsed) + " steps");
  }
  const Pcg64 rng = load_generator_words(state.data() + 4, kId);  // throws before anything changed

  cue_ = static_cast<int32_t>(cue);
  elapsed_steps_ = static_cast<int64_t>(elapsed);
  phase_ = static_cast<Phase>(phase);
  rng_seeded_ = seeded == 1;
  rng_ = rng;
}

}  // namespace moonseed::envs
