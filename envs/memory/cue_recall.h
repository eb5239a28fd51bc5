// CueRecall-v0: a memory task a feed-forward agent cannot solve. The first observation of an
// episode shows a cue c drawn uniformly from K values; the next `delay` (N) observations hide
// it; then a query observation asks for it. The action taken at the query step is rewarded
// +1 if it equals c and -1 otherwise, and the episode terminates: N + 2 steps in all. Actions
// before the query are rewarded 0 and change nothing. A recurrent agent can reach +1 per
// episode; one that cannot remember c gets at best the chance return (2 - K) / K (0 for K = 2).
//
// Observation float32 [K + 3], every element 0 or 1 (bounds [0, 1]):
//   [0, K)  one-hot of c on the cue observation (the one reset() writes), zero elsewhere;
//   [K]     1 on the cue observation;
//   [K + 1] 1 on the N delay observations (after steps 1..N);
//   [K + 2] 1 on the query observation (after step N + 1).
// The observation after the answer (step N + 2) is all zero. Delay and query observations are
// the same for every c. Action: Discrete(K).
//
// Options: delay N in [0, kMaxDelay], cues K in [kMinCues, kMaxCues]; max_episode_steps
// truncates as in the classic envs (0, the default, means none: the episode ends by itself).
// Seeding as the classic envs: reset(seed) seeds the numpy-compatible PCG64, reset() without
// a seed continues it (or seeds it from OS entropy if it was never seeded); the cue is
// floor(K * Generator.random()).
// get_state(): [c, elapsed steps, phase (0 before the first reset, 1 in an episode, 2 after
// it ended), generator seeded (0/1), 8 generator words (Pcg64::words)].
//
// Errors: the constructor throws std::invalid_argument for an option out of range; step()
// throws std::logic_error before the first reset() or after the episode ended and
// std::invalid_argument for an action outside [0, K); set_state() throws std::invalid_argument
// for a wrong size or a value get_state() cannot have produced, leaving the env unchanged.
// Not thread-safe: one thread at a time, as Env says.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "envs/env.h"
#include "envs/numpy_rng.h"

namespace moonseed::envs {

class CueRecall final : public Env {
 public:
  static constexpr const char* kId = "CueRecall-v0";
  static constexpr int kDefaultDelay = 5;
  static constexpr int kMaxDelay = 1000;
  static constexpr int kDefaultCues = 2;
  static constexpr int kMinCues = 2;
  static constexpr int kMaxCues = 16;
  static constexpr float kCorrectReward = 1.f;
  static constexpr float kWrongReward = -1.f;

  explicit CueRecall(int delay = kDefaultDelay, int cues = kDefaultCues, int max_episode_steps = 0);

  const EnvSpec& spec() const override { return spec_; }
  void reset(std::optional<uint64_t> seed, void* obs) override;
  StepResult step(const void* action, void* obs) override;
  std::vector<double> get_state() const override;
  void set_state(const std::vector<double>& state) override;

  int delay() const { return delay_; }
  int cues() const { return cues_; }

 private:
  enum class Phase { kNeverReset = 0, kRunning = 1, kEpisodeOver = 2 };

  // Writes the observation that follows `elapsed_steps_` steps of the current episode.
  void observe(void* obs) const;

  int delay_;
  int cues_;
  EnvSpec spec_;
  Pcg64 rng_{0};
  bool rng_seeded_ = false;
  Phase phase_ = Phase::kNeverReset;
  int64_t elapsed_steps_ = 0;
  int32_t cue_ = 0;
};

}  // namespace moonseed::envs
