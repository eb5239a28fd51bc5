// What every built-in classic-control env shares, so that each env file holds only its
// spec, its reset distribution and its dynamics (envpool style):
// - the numpy-compatible generator, seeded as Gymnasium's `reset(seed=...)`;
// - the time limit (Gymnasium's TimeLimit wrapper): truncated when the step count reaches
//   spec().max_episode_steps (0 = no limit); terminated and truncated may both be set;
// - episode bookkeeping: step() before the first reset() or after an episode ended throws
//   std::logic_error; a discrete action outside [0, n) throws std::invalid_argument;
// - get_state()/set_state(): physics, then [elapsed steps, phase (0 before the first
//   reset, 1 in an episode, 2 after it ended), generator seeded (0/1), 8 generator words
//   (Pcg64::words)], so set_state(get_state()) continues bit-identically. set_state throws
//   std::invalid_argument for a wrong size or a malformed bookkeeping value.
//
// Observations and actions are copied through local buffers, so `obs` and `action` need no
// alignment. Not thread-safe: one thread at a time, as Env says.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "envs/env.h"
#include "envs/numpy_rng.h"

namespace moonseed::envs {

// An action as the dynamics see it: the index for discrete spaces, the raw (unclipped)
// float32 values for boxes.
struct ClassicAction {
  int32_t index = 0;
  std::array<float, 4> values{};
};

class ClassicControlEnv : public Env {
 public:
  const EnvSpec& spec() const final { return spec_; }
  void reset(std::optional<uint64_t> seed, void* obs) final;
  StepResult step(const void* action, void* obs) final;
  std::vector<double> get_state() const final;
  void set_state(const std::vector<double>& state) final;

 protected:
  // `physics_size` doubles describe the env's own state in get_state().
  ClassicControlEnv(EnvSpec spec, size_t physics_size);

  // Draws the initial state from `rng` (as the Gymnasium reset does) and writes the first
  // observation (spec().observation.numel() floats).
  virtual void reset_physics(Pcg64& rng, float* obs) = 0;
  // One step of the dynamics: reward and terminated; truncation is added by the base.
  virtual StepResult step_physics(const ClassicAction& action, float* obs) = 0;
  virtual void save_physics(double* out) const = 0;
  virtual void load_physics(const double* in) = 0;

  // Steps taken since the last reset (0 right after reset, while step_physics runs it is
  // the count before this step).
  int64_t elapsed_steps() const { return elapsed_steps_; }

 private:
  static constexpr size_t kMaxElements = 8;
  static constexpr size_t kBookkeepingSize = 3 + 8;

  EnvSpec spec_;
  size_t physics_size_;
  Pcg64 rng_{0};
  bool rng_seeded_ = false;
  enum class Phase { kNeverReset = 0, kRunning = 1, kEpisodeOver = 2 };
  Phase phase_ = Phase::kNeverReset;
  int64_t elapsed_steps_ = 0;
  std::array<float, kMaxElements> obs_buffer_{};
};

}  // namespace moonseed::envs
