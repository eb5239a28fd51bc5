// The returns the learner reports. With reward shaping on (docs/reward-shaping.md)
// the actors send the rewards the shaping function returned, which the agents
// train on and sum into their EpisodeResults, and beside them the env's own
// rewards (rpc::StepBatch::env_rewards). EnvReturns sums the env's own per
// slot, the way the agents sum theirs, so that each finished episode has both
// returns; EpisodeMeans keeps the means of the last 100 episodes of each.
// Without shaping the two returns are the same.
//
// Thread-safety: none; EnvReturns belongs to the inference thread, the
// learner guards EpisodeMeans with its stats mutex.
#pragma once

#include <cstdint>
#include <deque>
#include <vector>

#include "engine/learner/stats.h"
#include "engine/learner/unroll_store.h"

namespace moonseed::engine {

// The mean of the last 100 values added; NaN before the first.
class RecentMean {
 public:
  void add(double v);
  double mean() const;

 private:
  std::deque<double> values_;
};

class EnvReturns {
 public:
  explicit EnvReturns(int num_slots);
  // The step of `slot` an agent observes with the same flags: kFirst starts
  // an episode afresh (its reward belongs to none), kTerminated or kTruncated
  // ends it after adding `env_reward`.
  void observe(int slot, float env_reward, uint8_t flags);
  // The slot's actor went away: its episode is forgotten (Agent::reset_slot).
  void reset_slot(int slot);
  // The env return of the episode the slot's latest step ended.
  double ended(int slot) const;

 private:
  std::vector<double> running_;
  std::vector<double> ended_;
};

struct EpisodeCounts {
  int64_t episodes = 0;       // training envs'
  int64_t eval_episodes = 0;  // evaluation envs'
};

class EpisodeMeans {
 public:
  // The agent's finished episodes, paired with their env returns; `eval_slot`
  // says which slots are evaluation envs'.
  EpisodeCounts add(const std::vector<EpisodeResult>& finished, const EnvReturns& env_returns,
                    const std::vector<bool>& eval_slot);
  // Sets return_mean, shaped_return_mean, length_mean, eval_return_mean and
  // eval_shaped_return_mean.
  void fill(LearnerStats& s) const;

 private:
  RecentMean returns_, shaped_returns_, lengths_, eval_returns_, eval_shaped_returns_;
};

}  // namespace moonseed::engine
