// Env steps per second on one core, for each env id given (default: CartPole-v1 and the five
// MinAtar games), stepped the way an actor steps an env group: the group's envs in turn, each
// writing its observation into one batch buffer, an env that ended reset on its next turn.
// Actions come from a fixed table of uniform random actions (discrete: any index; boxes:
// uniform within the bounds), so every variant does the same work per step and the figures
// are the envs' own cost. Variants alternate in short slices so machine noise hits them alike;
// each figure is the fastest slice. The ratio column is against the first id (CartPole-v1 by
// default), measured in the same run: compare ratios across runs, not the absolute rates.
// Usage: env_bench [total_seconds=10] [group_size=16] [ENV_ID...]
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "bench/env_group.h"

namespace {

using moonseed::bench::EnvGroup;
using moonseed::bench::fastest;
using moonseed::bench::per_call;
using moonseed::bench::rate_text;

constexpr int kSlices = 20;

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
  std::vector<std::unique_ptr<EnvGroup>> groups;
  try {
    for (const std::string& id : ids) groups.push_back(std::make_unique<EnvGroup>(id, group_size, 1000));
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
      EnvGroup& group = *groups[v];
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
