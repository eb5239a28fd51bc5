// Helpers for the tests of one MinAtar game's rules: an env put into a hand-written game state
// through set_state, stepped, and its observation cells read.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "envs/env.h"
#include "envs/numpy_legacy_rng.h"

namespace moonseed::envs::testing {

// MinAtarEnv's get_state(): 4 header values, the game's values, then the generator.
inline constexpr size_t kMinAtarHeader = 4;

// `id` without sticky actions, reset with seed 1.
inline std::unique_ptr<Env> minatar_env(const std::string& id, bool difficulty_ramping = true) {
  auto env =
      make_env(id, {{"sticky_action_prob", 0}, {"difficulty_ramping", difficulty_ramping ? 1 : 0}});
  std::vector<uint8_t> obs(static_cast<size_t>(env->spec().observation.byte_size()));
  env->reset(1, obs.data());
  return env;
}

// The game's part of the state.
inline std::vector<double> game_state(const Env& env) {
  const std::vector<double> state = env.get_state();
  return std::vector<double>(state.begin() + kMinAtarHeader,
                             state.end() - LegacyRandomState::kStateSize);
}

// Replaces the game's part of the state, keeping the header and the generator.
inline void set_game_state(Env& env, const std::vector<double>& game) {
  const std::vector<double> state = env.get_state();
  std::vector<double> next(state.begin(), state.begin() + kMinAtarHeader);
  next.insert(next.end(), game.begin(), game.end());
  next.insert(next.end(), state.end() - LegacyRandomState::kStateSize, state.end());
  env.set_state(next);
}

// The generator's position (how many of its 624 words are used), the state's last value.
inline int generator_position(const Env& env) { return static_cast<int>(env.get_state().back()); }

struct Frame {
  std::vector<uint8_t> obs;
  StepResult result;
  int channels = 0;

  bool on(int row, int column, int channel) const {
    return obs[static_cast<size_t>((row * 10 + column) * channels + channel)] == 1;
  }
  // How many cells of `channel` are on.
  int count(int channel) const {
    int n = 0;
    for (int cell = 0; cell < 100; ++cell) n += obs[static_cast<size_t>(cell * channels + channel)];
    return n;
  }
};

// One step with the action of index `action` in the env's action set.
inline Frame step_frame(Env& env, int32_t action) {
  Frame frame;
  frame.channels = static_cast<int>(env.spec().observation.shape[2]);
  frame.obs.assign(static_cast<size_t>(env.spec().observation.byte_size()), 0);
  frame.result = env.step(&action, frame.obs.data());
  return frame;
}

}  // namespace moonseed::envs::testing
