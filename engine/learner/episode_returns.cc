#include "engine/learner/episode_returns.h"

#include <limits>


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

EpisodeCounts EpisodeMeans::add(const std::vector<EpisodeResult>& finished, const std::vector<bool>& eval_slot) {
  EpisodeCounts counts;
  for (const EpisodeResult& e : finished) {
    const double env_return = e.env_return;
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
