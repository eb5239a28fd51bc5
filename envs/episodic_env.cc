#include "envs/episodic_env.h"

#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>

#include "base/check.h"
#include "base/constants.h"

namespace moonseed::envs {

EpisodicEnv::EpisodicEnv(EnvSpec spec, StateLayout layout) : spec_(std::move(spec)), layout_(layout) {
  if (spec_.max_episode_steps < 0) {
    throw std::invalid_argument(spec_.id + ": max_episode_steps must be >= 0, got " +
                                std::to_string(spec_.max_episode_steps));
  }
  if (spec_.action.kind == SpaceKind::kBox &&
      (spec_.action.dtype != DType::kFloat32 || spec_.action.numel() > static_cast<int64_t>(kMaxActionValues))) {
    throw std::logic_error("EpisodicEnv: " + spec_.describe() + ": box actions are at most " +
                           std::to_string(kMaxActionValues) + " float32 values");
  }
  const size_t generator = layout_.size - kGeneratorWords;
  const bool fits = layout_.size >= 3 + kGeneratorWords && layout_.elapsed < generator &&
                    layout_.phase < generator && layout_.seeded < generator;
  if (!fits || layout_.elapsed == layout_.phase || layout_.elapsed == layout_.seeded ||
      layout_.phase == layout_.seeded) {
    throw std::logic_error("EpisodicEnv: " + spec_.id + "'s state layout puts two values in one slot");
  }
}

void EpisodicEnv::reset(std::optional<uint64_t> seed, void* obs) {
  reseed_on_reset(seed, rng_, rng_seeded_);
  elapsed_steps_ = 0;
  start_episode(obs);
  phase_ = Phase::kRunning;
}

StepResult EpisodicEnv::step(const void* action, void* obs) {
  if (phase_ != Phase::kRunning) {
    throw std::logic_error(spec_.id + " step: " +
                           (phase_ == Phase::kNeverReset
                                ? std::string("called before the first reset()")
                                : "the episode ended after " + std::to_string(elapsed_steps_) +
                                      " steps; call reset() first"));
  }
  Action parsed;
  if (spec_.action.kind == SpaceKind::kDiscrete) {
    std::memcpy(&parsed.index, action, sizeof(parsed.index));
    base::require_index(parsed.index, spec_.action.n, spec_.id, " step: action");
  } else {
    std::memcpy(parsed.values.data(), action, static_cast<size_t>(spec_.action.byte_size()));
  }

  ++elapsed_steps_;
  StepResult result = advance(parsed, obs);
  if (spec_.max_episode_steps > 0 && elapsed_steps_ >= spec_.max_episode_steps) result.truncated = true;
  if (result.terminated || result.truncated) phase_ = Phase::kEpisodeOver;
  return result;
}

std::vector<double> EpisodicEnv::get_state() const {
  std::vector<double> state(layout_.size);
  save_state(state.data());
  state[layout_.elapsed] = static_cast<double>(elapsed_steps_);
  state[layout_.phase] = static_cast<double>(static_cast<int>(phase_));
  state[layout_.seeded] = rng_seeded_ ? 1.0 : 0.0;
  save_generator_words(rng_, state.data() + layout_.size - kGeneratorWords);
  return state;
}

void EpisodicEnv::set_state(const std::vector<double>& state) {
  if (state.size() != layout_.size) {
    throw std::invalid_argument(spec_.id + " set_state: expected " + std::to_string(layout_.size) +
                                " values, got " + std::to_string(state.size()));
  }
  Episode episode;
  episode.elapsed_steps = state_integer(state[layout_.elapsed], 0, static_cast<int64_t>(base::kMaxExactInteger),
                                        "elapsed steps");
  const auto phase = static_cast<Phase>(state_integer(state[layout_.phase], 0, 2, "phase"));
  const bool seeded = state_integer(state[layout_.seeded], 0, 1, "generator seeded") == 1;
  episode.running = phase == Phase::kRunning;
  // The time limit ends an episode at its step, so none runs past it.
  if (episode.running && spec_.max_episode_steps > 0 && episode.elapsed_steps >= spec_.max_episode_steps) {
    throw std::invalid_argument(spec_.id + " set_state: an episode cannot be running after " +
                                std::to_string(episode.elapsed_steps) + " steps with max_episode_steps " +
                                std::to_string(spec_.max_episode_steps));
  }
  const Pcg64 rng = load_generator_words(state.data() + layout_.size - kGeneratorWords, spec_.id);

  load_state(state.data(), episode);  // the last step that may throw
  rng_ = rng;
  rng_seeded_ = seeded;
  elapsed_steps_ = episode.elapsed_steps;
  phase_ = phase;
}

void EpisodicEnv::write_floats(void* obs, std::initializer_list<float> values) {
  std::memcpy(obs, values.begin(), values.size() * sizeof(float));
}

int64_t EpisodicEnv::state_integer(double value, int64_t low, int64_t high, const char* what) const {
  const auto checked = static_cast<int64_t>(checked_state_word(value, static_cast<double>(high), what, spec_.id));
  if (checked < low) {
    throw std::invalid_argument(spec_.id + " set_state: " + what + " = " + std::to_string(checked) +
                                " is below " + std::to_string(low));
  }
  return checked;
}

void EpisodicEnv::require_reachable(const Episode& episode, int64_t last_step) const {
  if (episode.elapsed_steps > last_step) {
    throw std::invalid_argument(spec_.id + " set_state: elapsed steps = " + std::to_string(episode.elapsed_steps) +
                                " is past the episode's end after " + std::to_string(last_step) + " steps");
  }
  if (episode.running && episode.elapsed_steps == last_step) {
    throw std::invalid_argument(spec_.id + " set_state: an episode of " + std::to_string(last_step) +
                                " steps cannot be running after " + std::to_string(episode.elapsed_steps) +
                                " steps");
  }
}

void require_option(const char* env_id, const char* name, int value, int low, int high) {
  if (value < low || value > high) {
    throw std::invalid_argument(std::string(env_id) + ": " + name + " must be in [" + std::to_string(low) + ", " +
                                std::to_string(high) + "], got " + std::to_string(value));
  }
}

}  // namespace moonseed::envs
