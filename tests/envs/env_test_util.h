// Small helpers shared by the env tests: typed step/reset wrappers and a way to put an env
// into a chosen physical state through the public get_state/set_state.
#pragma once

#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "envs/env.h"
#include "envs/mujoco/mujoco_env.h"

namespace moonseed::envs::testing {

// The files an id reads, for tests that make every id: MuJoCo/Model-v0 gets the shipped
// inverted pendulum's MJCF source file; other ids read none.
inline EnvFiles files_for(const std::string& id) {
  return id == MujocoEnv::kModelId ? EnvFiles{MOONSEED_SOURCE_DIR "/envs/mujoco/models/inverted_pendulum.xml"}
                                 : EnvFiles{};
}

// Why `id` cannot be made on this host ("" when it can): MuJoCo/Humanoid-v0 needs the model of
// Debian's libmujoco-samples, which CI installs (.ci/setup); tests skip it, saying so, elsewhere.
inline std::string unavailable_because(const std::string& id) {
  if (id == MujocoEnv::kHumanoidId && !std::filesystem::exists(MujocoEnv::kHumanoidPath)) {
    return std::string(id) + " needs " + MujocoEnv::kHumanoidPath + ": apt-get install libmujoco-samples";
  }
  return "";
}

// make_env with the files the id reads.
inline std::unique_ptr<Env> make_test_env(const std::string& id, const EnvOptions& options = {}) {
  return make_env(id, options, files_for(id));
}

struct Outcome {
  std::vector<float> obs;
  StepResult result;
};

inline std::vector<float> reset_env(Env& env, std::optional<uint64_t> seed) {
  std::vector<float> obs(static_cast<size_t>(env.spec().observation.numel()));
  env.reset(seed, obs.data());
  return obs;
}

inline Outcome step_discrete(Env& env, int32_t action) {
  Outcome out;
  out.obs.resize(static_cast<size_t>(env.spec().observation.numel()));
  out.result = env.step(&action, out.obs.data());
  return out;
}

inline Outcome step_box(Env& env, float action) {
  Outcome out;
  out.obs.resize(static_cast<size_t>(env.spec().observation.numel()));
  out.result = env.step(&action, out.obs.data());
  return out;
}

// Resets with `seed`, then overwrites the leading physics values of the state (the layout
// each env header documents) and loads it back, keeping the bookkeeping of a fresh episode.
inline void set_physics(Env& env, std::initializer_list<double> physics, uint64_t seed = 0) {
  reset_env(env, seed);
  std::vector<double> state = env.get_state();
  size_t i = 0;
  for (double value : physics) state[i++] = value;
  env.set_state(state);
}

inline std::vector<double> physics_of(const Env& env, size_t count) {
  const std::vector<double> state = env.get_state();
  return std::vector<double>(state.begin(), state.begin() + static_cast<long>(count));
}

}  // namespace moonseed::envs::testing
