// An actor's env group for the benches: `count` envs of one id, each writing its observation
// into one batch buffer, stepped in turn with actions from a fixed table of uniform random
// actions (discrete: any index; boxes: uniform within the bounds), and an env whose episode
// ended reset on its next turn instead of stepped, as actor/actor_loop.cc does.
//
// Contract: header-only; make_env's exceptions (an unknown id, a missing model) leave the
// constructor. Thread-safety: one thread at a time.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "envs/env.h"

namespace moonseed::bench {

class EnvGroup {
 public:
  // Env i is reset with seed `first_seed + i`.
  EnvGroup(const std::string& id, int count, uint64_t first_seed = 0) {
    for (int i = 0; i < count; ++i) envs_.push_back(envs::make_env(id));
    const envs::EnvSpec& spec = envs_.front()->spec();
    obs_bytes_ = static_cast<size_t>(spec.observation.byte_size());
    action_bytes_ = static_cast<size_t>(spec.action.byte_size());
    observations_.resize(obs_bytes_ * envs_.size());
    ended_.assign(envs_.size(), 0);
    std::mt19937 random(7);
    actions_.resize(kActions * action_bytes_);
    for (size_t a = 0; a < kActions; ++a) {
      uint8_t* out = &actions_[a * action_bytes_];
      if (spec.action.kind == envs::SpaceKind::kDiscrete) {
        const auto index = static_cast<int32_t>(random() % static_cast<uint32_t>(spec.action.n));
        std::memcpy(out, &index, sizeof index);
        continue;
      }
      for (size_t k = 0; k < static_cast<size_t>(spec.action.numel()); ++k) {
        const float v = std::uniform_real_distribution<float>(spec.action.low[k], spec.action.high[k])(random);
        std::memcpy(out + k * sizeof(float), &v, sizeof v);
      }
    }
    for (size_t i = 0; i < envs_.size(); ++i) {
      envs_[i]->reset(first_seed + i, &observations_[i * obs_bytes_]);
    }
  }

  // Steps every env of the group once (or resets it, after an episode end).
  void step() {
    for (size_t i = 0; i < envs_.size(); ++i) {
      uint8_t* obs = &observations_[i * obs_bytes_];
      if (ended_[i]) {
        envs_[i]->reset(std::nullopt, obs);
        ended_[i] = 0;
        continue;
      }
      next_ = (next_ + 1) % kActions;
      const envs::StepResult r = envs_[i]->step(&actions_[next_ * action_bytes_], obs);
      ended_[i] = r.terminated || r.truncated;
    }
  }

  size_t size() const { return envs_.size(); }
  const envs::Env& front() const { return *envs_.front(); }

 private:
  static constexpr size_t kActions = 4096;
  std::vector<std::unique_ptr<envs::Env>> envs_;
  size_t obs_bytes_ = 0, action_bytes_ = 0, next_ = 0;
  std::vector<uint8_t> observations_, actions_, ended_;
};

}  // namespace moonseed::bench
