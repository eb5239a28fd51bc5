#include "engine/learner/episode_returns.h"

#include <limits>

#include "base/check.h"
#include "envs/env.h"

namespace moonseed::engine {

namespace {
constexpr size_t kReturnWindow = 100;
}  // namespace

void RecentMean::add(double v) {
  values_.push_back(v);
  if (values_.size() > kReturnWindow) values_.pop_front();
}

double RecentMean::mean() const {
  if (values_.empty()) return std::numeric_limits<double>::quiet_NaN();
  double sum = 0;
  for (double v : values_) sum += v;
  return sum / static_cast<double>(values_.size());
}

EnvReturns::EnvReturns(int num_slots)
    : running_(static_cast<size_t>(num_slots), 0.0), ended_(static_cast<size_t>(num_slots), 0.0) {}

void EnvReturns::observe(int slot, float env_reward, uint8_t flags) {
  base::require_index(slot, static_cast<int>(running_.size()), "EnvReturns::observe: slot");
  double& running = running_[static_cast<size_t>(slot)];
  if (flags & envs::kFirst) {
    running = 0;
    return;
  }
  running += env_reward;
  if (flags & (envs::kTerminated | envs::kTruncated)) {
    ended_[static_cast<size_t>(slot)] = running;
    running = 0;
  }
}

void EnvReturns::reset_slot(int slot) {
  base::require_index(slot, static_cast<int>(running_.size()), "EnvReturns::reset_slot: slot");
  running_[static_cast<size_t>(slot)] = 0;
}

double EnvReturns::ended(int slot) const {
  base::require_index(slot, static_cast<int>(ended_.size()), "EnvReturns::ended: slot");
  return ended_[static_cast<size_t>(slot)];
}

EpisodeCounts EpisodeMeans::add(const std::vector<EpisodeResult>& finished, const EnvReturns& env_returns,
                                const std::vector<bool>& eval_slot) {
  EpisodeCounts counts;
  for (const EpisodeResult& e : finished) {
    const double env_return = env_returns.ended(e.slot);
    if (eval_slot[static_cast<size_t>(e.slot)]) {
      eval_returns_.add(env_return);
      eval_shaped_returns_.add(e.episode_return);
      counts.eval_episodes += 1;
      continue;
    }
    returns_.add(env_return);
    shaped_returns_.add(e.episode_return);
    lengths_.add(static_cast<double>(e.length));
    counts.episodes += 1;
  }
  return counts;
}

void EpisodeMeans::fill(LearnerStats& s) const {
  s.return_mean = returns_.mean();
  s.shaped_return_mean = shaped_returns_.mean();
  s.length_mean = lengths_.mean();
  s.eval_return_mean = eval_returns_.mean();
  s.eval_shaped_return_mean = eval_shaped_returns_.mean();
}

}  // namespace moonseed::engine
