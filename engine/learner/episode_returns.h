// The returns the learner reports. With reward shaping on (docs/reward-shaping.md)
// the actors send the rewards the shaping function returned, which the agents
// train on, and beside them the env's own rewards (rpc::StepBatch::env_rewards).
// The agents' stores sum both into each EpisodeResult (episode_return and
// env_return), in the one place that follows a slot's episode; EpisodeMeans keeps
// the means of the last 100 episodes of each. Without shaping the two are the same.
//
// Thread-safety: none; the learner guards EpisodeMeans with its stats mutex.
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

struct EpisodeCounts {
  int64_t episodes = 0;       // training envs'
  int64_t eval_episodes = 0;  // evaluation envs'
};

class EpisodeMeans {
 public:
  // The agent's finished episodes; `eval_slot` says which slots are evaluation envs'.
  EpisodeCounts add(const std::vector<EpisodeResult>& finished, const std::vector<bool>& eval_slot);
  // Sets return_mean, shaped_return_mean, length_mean, eval_return_mean and
  // eval_shaped_return_mean.
  void fill(LearnerStats& s) const;

 private:
  RecentMean returns_, shaped_returns_, lengths_, eval_returns_, eval_shaped_returns_;
};

}  // namespace moonseed::engine
