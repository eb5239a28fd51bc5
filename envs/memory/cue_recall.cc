#include "envs/memory/cue_recall.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <vector>

namespace moonseed::envs {
namespace {

// Checks the options before anything is sized by them.
EnvSpec cue_recall_spec(int delay, int cues, int max_episode_steps) {
  require_option(CueRecall::kId, "delay", delay, 0, CueRecall::kMaxDelay);
  require_option(CueRecall::kId, "cues", cues, CueRecall::kMinCues, CueRecall::kMaxCues);
  const size_t size = static_cast<size_t>(cues) + 3;
  return {CueRecall::kId, float32_box(std::vector<float>(size, 0.f), std::vector<float>(size, 1.f)),
          discrete_space(cues), max_episode_steps};
}

}  // namespace

CueRecall::CueRecall(int delay, int cues, int max_episode_steps)
    : EpisodicEnv(cue_recall_spec(delay, cues, max_episode_steps), own_then_bookkeeping(1)),
      delay_(delay),
      cues_(cues) {}

void CueRecall::start_episode(void* obs) {
  // next_double() < 1, and K * (1 - 2^-53) rounds below K for K <= 16; min() only documents it.
  cue_ = std::min(static_cast<int32_t>(rng().next_double() * cues_), cues_ - 1);
  observe(obs);
}

StepResult CueRecall::advance(const Action& action, void* obs) {
  StepResult result;
  if (elapsed_steps() == delay_ + 2) {  // this step answered the query
    result.reward = action.index == cue_ ? kCorrectReward : kWrongReward;
    result.terminated = true;
  }
  observe(obs);
  return result;
}

void CueRecall::observe(void* obs) const {
  std::array<float, kMaxCues + 3> values{};
  const int64_t elapsed = elapsed_steps();
  if (elapsed == 0) {
    values[static_cast<size_t>(cue_)] = 1.f;
    values[static_cast<size_t>(cues_)] = 1.f;
  } else if (elapsed <= delay_) {
    values[static_cast<size_t>(cues_) + 1] = 1.f;
  } else if (elapsed == delay_ + 1) {
    values[static_cast<size_t>(cues_) + 2] = 1.f;
  }
  std::memcpy(obs, values.data(), static_cast<size_t>(spec().observation.byte_size()));
}

void CueRecall::save_state(double* state) const { state[0] = static_cast<double>(cue_); }

void CueRecall::load_state(const double* state, const Episode& episode) {
  const auto cue = static_cast<int32_t>(state_integer(state[0], 0, cues_ - 1, "cue"));
  require_reachable(episode, delay_ + 2);
  cue_ = cue;
}

}  // namespace moonseed::envs
