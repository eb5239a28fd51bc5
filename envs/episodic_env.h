// The base of every built-in env: it owns what all of them share, so that an env file holds
// only its spec, its reset distribution and its dynamics (envpool style).
//
// Who owns what:
// - The base: the episode's phase (never reset / running / over), the steps taken, the time
//   limit (Gymnasium's TimeLimit: truncated when the step count reaches
//   spec().max_episode_steps, 0 = none; terminated and truncated may both be set), the
//   numpy-compatible generator (reset(seed) seeds it as Gymnasium's reset(seed=...) does;
//   reset() without a seed continues it, or seeds it from OS entropy if it never was), the
//   checks before a step, and its part of get_state()/set_state().
// - The derived env: its spec, what start_episode() draws, what advance() does, the
//   observation it writes and its own part of the state (save_state/load_state).
//
// Failure modes: step() before the first reset() or after the episode ended throws
// std::logic_error; a discrete action outside [0, n) throws std::invalid_argument;
// set_state() throws std::invalid_argument for a wrong size or a value get_state() cannot
// have produced (a malformed word, an episode still running at the time limit, whatever the
// env rejects) and then leaves the env unchanged. A spec the base cannot serve (a negative
// max_episode_steps, a box action of more than kMaxActionValues float32 values) throws from
// the constructor.
//
// The derived env writes its observation straight into the caller's `obs`, so a large one
// (SyntheticAtari's frames) is never copied; it must not assume `obs` is aligned
// (write_floats does not), and the base copies `action` out, so neither needs alignment.
// Not thread-safe: one thread at a time, as Env says.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <vector>

#include "envs/env.h"
#include "envs/numpy_rng.h"

namespace moonseed::envs {

class EpisodicEnv : public Env {
 public:
  // Box actions are copied into Action::values, so they are small: 64 covers a MuJoCo
  // humanoid's 21 actuators with room to spare.
  static constexpr size_t kMaxActionValues = 64;

  const EnvSpec& spec() const final { return spec_; }
  void reset(std::optional<uint64_t> seed, void* obs) final;
  StepResult step(const void* action, void* obs) final;
  std::vector<double> get_state() const final;
  void set_state(const std::vector<double>& state) final;

 protected:
  // An action as the dynamics see it: the checked index for discrete spaces, the raw
  // (unclipped) float32 values for boxes.
  struct Action {
    int32_t index = 0;
    std::array<float, kMaxActionValues> values{};
  };

  // The bookkeeping set_state() is about to load, for the env's own cross-checks.
  struct Episode {
    int64_t elapsed_steps = 0;
    bool running = false;
  };

  // Where get_state() keeps the base's values: elapsed steps, phase (0 before the first
  // reset, 1 in an episode, 2 after it ended) and "generator seeded" (0/1) at these indices,
  // and the 8 generator words (Pcg64::words) always last. Every other index is the env's.
  struct StateLayout {
    size_t size = 0;
    size_t elapsed = 0, phase = 0, seeded = 0;
  };
  // The usual layout: the env's `own_size` values, then [elapsed, phase, seeded, generator].
  static constexpr StateLayout own_then_bookkeeping(size_t own_size) {
    return {own_size + 3 + kGeneratorWords, own_size, own_size + 1, own_size + 2};
  }

  // Throws std::invalid_argument for a negative max_episode_steps and std::logic_error for
  // a layout whose slots collide or a box action the base cannot copy.
  EpisodicEnv(EnvSpec spec, StateLayout layout);

  // Draws the initial state from rng() (as the Gymnasium reset does) and writes the first
  // observation. elapsed_steps() is 0.
  virtual void start_episode(void* obs) = 0;
  // One step of the dynamics: reward and terminated; the base adds truncation. elapsed_steps()
  // already counts this step (1 on the first step after a reset).
  virtual StepResult advance(const Action& action, void* obs) = 0;
  // Writes the env's values into their slots of `state` (the full get_state() vector).
  virtual void save_state(double* state) const = 0;
  // Reads the env's values from `state`, which save_state wrote; must check them all (with
  // `episode`, the incoming bookkeeping) before changing anything, and throw
  // std::invalid_argument for any it cannot have written. The base's values are checked
  // before and loaded after.
  virtual void load_state(const double* state, const Episode& episode) = 0;

  // The episode's generator; drawing from it in advance() is fine, the state keeps it.
  Pcg64& rng() { return rng_; }
  // Steps of the current episode (see start_episode and advance for when it counts).
  int64_t elapsed_steps() const { return elapsed_steps_; }

  // Copies `values` to `obs`: how the small float32 observations are written.
  static void write_floats(void* obs, std::initializer_list<float> values);
  // For load_state: `value` as an integer in [low, high], else std::invalid_argument
  // "<id> set_state: <what> = <value> ...".
  int64_t state_integer(double value, int64_t low, int64_t high, const char* what) const;
  // For load_state of an env whose episode ends by itself after `last_step` steps: throws
  // std::invalid_argument unless `episode` could be one of them (at most `last_step` steps,
  // and not running after the last).
  void require_reachable(const Episode& episode, int64_t last_step) const;

 private:
  static constexpr size_t kGeneratorWords = 8;
  enum class Phase { kNeverReset = 0, kRunning = 1, kEpisodeOver = 2 };

  EnvSpec spec_;
  StateLayout layout_;
  Pcg64 rng_{0};
  bool rng_seeded_ = false;
  Phase phase_ = Phase::kNeverReset;
  int64_t elapsed_steps_ = 0;
};

// For an env's integer options, checked before they size its spec: std::invalid_argument
// "<env_id>: <name> must be in [low, high], got <value>" when `value` is outside.
void require_option(const char* env_id, const char* name, int value, int low, int high);

}  // namespace moonseed::envs
