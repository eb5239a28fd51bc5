// Env steps per second on one core, for each env id given (default: CartPole-v1 and the five
// MinAtar games), stepped the way an actor steps an env group: the group's envs in turn, each
// writing its observation into one batch buffer, an env that ended reset on its next turn.
// Actions come from a fixed table of uniform random actions (discrete: any index; boxes:
// uniform within the bounds), so every variant does the same work per step and the figures
// are the envs' own cost. Variants alternate in short slices so machine noise hits them alike;
// each figure is the fastest slice. The ratio column is against the first id (CartPole-v1 by
// default), measured in the same run: compare ratios across runs, not the absolute rates.
// Usage: env_bench [total_seconds=10] [group_size=16] [ENV_ID...]
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "envs/env.h"

namespace {

namespace envs = moonseed::envs;
using moonseed::bench::fastest;
using moonseed::bench::per_call;
using moonseed::bench::rate_text;

constexpr int kSlices = 20;
constexpr size_t kActionTable = 4096;

// One actor env group of one id.
class Group {
 public:
  Group(const std::string& id, int size) {
    for (int i = 0; i < size; ++i) envs_.push_back(envs::make_env(id));
    const envs::EnvSpec& spec = envs_.front()->spec();
    obs_bytes_ = static_cast<size_t>(spec.observation.byte_size());
    action_bytes_ = static_cast<size_t>(spec.action.byte_size());
    observations_.resize(obs_bytes_ * envs_.size());
    ended_.assign(envs_.size(), 0);
    std::mt19937 random(7);
    actions_.resize(kActionTable * action_bytes_);
    for (size_t a = 0; a < kActionTable; ++a) {
      if (spec.action.kind == envs::SpaceKind::kDiscrete) {
        const auto index = static_cast<int32_t>(random() % static_cast<uint32_t>(spec.action.n));
        std::memcpy(&actions_[a * action_bytes_], &index, sizeof index);
      } else {
        for (int64_t k = 0; k < spec.action.numel(); ++k) {
          const size_t i = static_cast<size_t>(k);
          std::uniform_real_distribution<float> value(spec.action.low[i], spec.action.high[i]);
          const float v = value(random);
          std::memcpy(&actions_[a * action_bytes_ + i * sizeof(float)], &v, sizeof v);
        }
      }
    }
    for (size_t i = 0; i < envs_.size(); ++i) envs_[i]->reset(1000 + i, &observations_[i * obs_bytes_]);
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
      next_ = (next_ + 1) % kActionTable;
      const envs::StepResult r = envs_[i]->step(&actions_[next_ * action_bytes_], obs);
      ended_[i] = r.terminated || r.truncated;
    }
  }

  size_t size() const { return envs_.size(); }

 private:
  std::vector<std::unique_ptr<envs::Env>> envs_;
  size_t obs_bytes_ = 0, action_bytes_ = 0, next_ = 0;
  std::vector<uint8_t> observations_, actions_, ended_;
};

}  // namespace

int main(int argc, char** argv) {
  const double total = argc > 1 ? std::atof(argv[1]) : 10.0;
  const int group_size = argc > 2 ? std::atoi(argv[2]) : 16;
  std::vector<std::string> ids;
  for (int i = 3; i < argc; ++i) ids.push_back(argv[i]);
  if (ids.empty()) {
    ids = {"CartPole-v1",           "MinAtar/Asterix-v1",  "MinAtar/Breakout-v1",
           "MinAtar/Freeway-v1",    "MinAtar/Seaquest-v1", "MinAtar/SpaceInvaders-v1"};
  }
  if (!(total > 0) || group_size < 1) {
    std::fprintf(stderr, "usage: env_bench [total_seconds=10] [group_size=16] [ENV_ID...]\n");
    return 2;
  }
  std::vector<std::unique_ptr<Group>> groups;
  try {
    for (const std::string& id : ids) groups.push_back(std::make_unique<Group>(id, group_size));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "env_bench: %s\n", e.what());
    return 2;
  }
  std::printf("env_bench: %zu ids, groups of %d envs, %d slices of %.3f s each, one core\n",
              ids.size(), group_size, kSlices, total / kSlices / static_cast<double>(ids.size()));
  std::vector<std::vector<double>> per_step(ids.size());
  const double slice = total / kSlices / static_cast<double>(ids.size());
  for (int s = 0; s < kSlices; ++s) {
    for (size_t v = 0; v < groups.size(); ++v) {
      Group& group = *groups[v];
      per_step[v].push_back(per_call(slice, 8, [&] { group.step(); }) /
                            static_cast<double>(group.size()));
    }
  }
  const double baseline = fastest(per_step[0]);
  std::printf("%-28s %14s %12s %10s\n", "env", "steps/s/core", "ns/step", "rate/first");
  for (size_t v = 0; v < ids.size(); ++v) {
    const double t = fastest(per_step[v]);
    std::printf("%-28s %14s %12.0f %10.2f\n", ids[v].c_str(), rate_text(1.0 / t).c_str(), t * 1e9,
                baseline / t);
  }
  return 0;
}
