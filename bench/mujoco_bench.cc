// What a MuJoCo env costs an actor's core (docs/performance.md "MuJoCo"): env steps and
// physics steps (mj_step calls: env steps x frame_skip) per second of one core, for one env
// and for a group of envs stepped in turn (as an actor's env group is), with random actions
// inside the action box and a reset whenever an episode ends, as in training.
//
// The baseline, measured in the same run, is CartPole-v1 stepped the same way; ratios are
// against its env steps per second. The cases alternate in short slices and each keeps its
// fastest slice, since other processes only ever add time.
//
// usage: mujoco_bench [rounds] [group]   (default 10 rounds of 0.3 s, a group of 16 envs)
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <memory>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "envs/env.h"
#include "envs/mujoco/mujoco_env.h"

namespace {

using moonseed::envs::Env;

// `count` envs of `id`, reset with seeds 0..count-1, stepped in turn with actions drawn
// before timing.
class Group {
 public:
  Group(const std::string& id, int count) {
    std::mt19937 random(7);
    for (int i = 0; i < count; ++i) {
      envs_.push_back(moonseed::envs::make_env(id));
      obs_.emplace_back(static_cast<size_t>(envs_.back()->spec().observation.byte_size()));
      envs_.back()->reset(static_cast<uint64_t>(i), obs_.back().data());
    }
    const auto* mujoco = dynamic_cast<const moonseed::envs::MujocoEnv*>(envs_.front().get());
    frame_skip_ = mujoco != nullptr ? mujoco->frame_skip() : 1;
    const moonseed::envs::Space& action = envs_.front()->spec().action;
    for (int k = 0; k < kActions; ++k) {
      std::vector<uint8_t> bytes(static_cast<size_t>(action.byte_size()));
      if (action.kind == moonseed::envs::SpaceKind::kDiscrete) {
        const auto index = static_cast<int32_t>(random() % static_cast<uint32_t>(action.n));
        std::memcpy(bytes.data(), &index, sizeof(index));
      } else {
        std::vector<float> values(static_cast<size_t>(action.numel()));
        for (size_t j = 0; j < values.size(); ++j) {
          values[j] = std::uniform_real_distribution<float>(action.low[j], action.high[j])(random);
        }
        std::memcpy(bytes.data(), values.data(), bytes.size());
      }
      actions_.push_back(std::move(bytes));
    }
  }

  // One step of every env of the group (a reset instead for those whose episode ended).
  void step() {
    for (size_t i = 0; i < envs_.size(); ++i) {
      const moonseed::envs::StepResult r = envs_[i]->step(actions_[next_].data(), obs_[i].data());
      next_ = (next_ + 1) % actions_.size();
      if (r.terminated || r.truncated) envs_[i]->reset(std::nullopt, obs_[i].data());
    }
  }

  int size() const { return static_cast<int>(envs_.size()); }
  int frame_skip() const { return frame_skip_; }

 private:
  static constexpr int kActions = 997;
  std::vector<std::unique_ptr<Env>> envs_;
  std::vector<std::vector<uint8_t>> obs_;
  std::vector<std::vector<uint8_t>> actions_;
  size_t next_ = 0;
  int frame_skip_ = 1;
};

struct Case {
  std::string name;
  std::unique_ptr<Group> group;
  std::vector<double> seconds_per_env_step;
};

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 10;
  const int group = argc > 2 ? std::atoi(argv[2]) : 16;
  if (rounds < 1 || group < 1) {
    std::fprintf(stderr, "usage: mujoco_bench [rounds >= 1] [group >= 1]\n");
    return 2;
  }
  using moonseed::envs::MujocoEnv;
  std::vector<Case> cases;
  cases.push_back({"CartPole-v1, 1 env (baseline)", std::make_unique<Group>("CartPole-v1", 1), {}});
  cases.push_back({"CartPole-v1, group of " + std::to_string(group),
                   std::make_unique<Group>("CartPole-v1", group), {}});
  cases.push_back({"InvertedPendulum-v0, 1 env", std::make_unique<Group>(MujocoEnv::kInvertedPendulumId, 1), {}});
  try {
    cases.push_back({"Humanoid-v0, 1 env", std::make_unique<Group>(MujocoEnv::kHumanoidId, 1), {}});
    cases.push_back({"Humanoid-v0, group of " + std::to_string(group),
                     std::make_unique<Group>(MujocoEnv::kHumanoidId, group), {}});
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "mujoco_bench: no humanoid cases: %s\n", e.what());
  }

  for (int round = 0; round < rounds; ++round) {
    for (Case& c : cases) {
      Group& g = *c.group;
      const double per_group_step = moonseed::bench::per_call(0.3, 1, [&] { g.step(); });
      c.seconds_per_env_step.push_back(per_group_step / g.size());
    }
  }

  const double baseline = 1.0 / moonseed::bench::fastest(cases.front().seconds_per_env_step);
  std::printf("one core, fastest of %d slices of 0.3 s; random actions, reset on episode end\n", rounds);
  std::printf("%-36s %14s %18s %16s\n", "case", "env steps/s", "physics steps/s", "vs CartPole env");
  for (const Case& c : cases) {
    const double steps = 1.0 / moonseed::bench::fastest(c.seconds_per_env_step);
    std::printf("%-36s %14s %18s %16.4f\n", c.name.c_str(), moonseed::bench::rate_text(steps).c_str(),
                moonseed::bench::rate_text(steps * c.group->frame_skip()).c_str(), steps / baseline);
  }
  return 0;
}
