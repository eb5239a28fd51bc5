// What a MuJoCo env costs an actor's core (docs/performance.md "MuJoCo"): env steps and
// physics steps (mj_step calls: env steps x frame_skip) per second of one core, for one env
// and for a group of envs stepped in turn (as an actor's env group is), with random actions
// inside the action box and an ended episode reset on the env's next turn, as in training
// (bench/env_group.h).
//
// The baseline, measured in the same run, is CartPole-v1 stepped the same way; ratios are
// against its env steps per second. The cases alternate in short slices and each keeps its
// fastest slice, since other processes only ever add time.
//
// usage: mujoco_bench [rounds] [group]   (default 10 rounds of 0.3 s, a group of 16 envs)
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "bench/env_group.h"
#include "envs/env.h"
#include "envs/mujoco/mujoco_env.h"

namespace {

using moonseed::bench::EnvGroup;

// mj_step calls per env step of the group's env: its frame_skip, 1 for any other env.
int frame_skip_of(const EnvGroup& group) {
  const auto* mujoco = dynamic_cast<const moonseed::envs::MujocoEnv*>(&group.front());
  return mujoco != nullptr ? mujoco->frame_skip() : 1;
}

struct Case {
  std::string name;
  std::unique_ptr<EnvGroup> group;
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
  cases.push_back({"CartPole-v1, 1 env (baseline)", std::make_unique<EnvGroup>("CartPole-v1", 1), {}});
  cases.push_back({"CartPole-v1, group of " + std::to_string(group),
                   std::make_unique<EnvGroup>("CartPole-v1", group), {}});
  cases.push_back({"InvertedPendulum-v0, 1 env", std::make_unique<EnvGroup>(MujocoEnv::kInvertedPendulumId, 1), {}});
  try {
    cases.push_back({"Humanoid-v0, 1 env", std::make_unique<EnvGroup>(MujocoEnv::kHumanoidId, 1), {}});
    cases.push_back({"Humanoid-v0, group of " + std::to_string(group),
                     std::make_unique<EnvGroup>(MujocoEnv::kHumanoidId, group), {}});
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "mujoco_bench: no humanoid cases: %s\n", e.what());
  }

  for (int round = 0; round < rounds; ++round) {
    for (Case& c : cases) {
      EnvGroup& g = *c.group;
      const double per_group_step = moonseed::bench::per_call(0.3, 1, [&] { g.step(); });
      c.seconds_per_env_step.push_back(per_group_step / static_cast<double>(g.size()));
    }
  }

  const double baseline = 1.0 / moonseed::bench::fastest(cases.front().seconds_per_env_step);
  std::printf("one core, fastest of %d slices of 0.3 s; random actions, reset on episode end\n", rounds);
  std::printf("%-36s %14s %18s %16s\n", "case", "env steps/s", "physics steps/s", "vs CartPole env");
  for (const Case& c : cases) {
    const double steps = 1.0 / moonseed::bench::fastest(c.seconds_per_env_step);
    std::printf("%-36s %14s %18s %16.4f\n", c.name.c_str(), moonseed::bench::rate_text(steps).c_str(),
                moonseed::bench::rate_text(steps * frame_skip_of(*c.group)).c_str(), steps / baseline);
  }
  return 0;
}
