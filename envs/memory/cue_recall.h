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
// Options: delay N in [0, kMaxDelay], cues K in [kMinCues, kMaxCues], max_episode_steps (0, the
// default, means none: the episode ends by itself). Seeding, the time limit, the step checks
// and the state's bookkeeping are EpisodicEnv's; the cue is floor(K * Generator.random()).
// get_state(): [c], then EpisodicEnv's bookkeeping ([elapsed steps, phase, generator seeded,
// 8 generator words]).
//
// Errors: the constructor throws std::invalid_argument for an option out of range; step()
// and set_state() fail as EpisodicEnv says (set_state() also rejects a cue outside [0, K) and
// more than N + 2 steps). Not thread-safe: one thread at a time, as Env says.
#pragma once

#include <cstdint>

#include "envs/episodic_env.h"

namespace moonseed::envs {

class CueRecall final : public EpisodicEnv {
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

  int delay() const { return delay_; }
  int cues() const { return cues_; }

 private:
  void start_episode(void* obs) override;
  StepResult advance(const Action& action, void* obs) override;
  void save_state(double* state) const override;
  void load_state(const double* state, const Episode& episode) override;
  // Writes the observation that follows elapsed_steps() steps of the current episode.
  void observe(void* obs) const;

  int delay_;
  int cues_;
  int32_t cue_ = 0;
};

}  // namespace moonseed::envs
