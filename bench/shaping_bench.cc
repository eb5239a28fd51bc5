// What reward shaping costs the actor per env-step, measured side by side in
// one run for groups of 16 and 32 CartPole envs. Each variant runs the actor's
// per-group work: step every env of the group (autoreset), then
//   none:    nothing more (the baseline);
//   empty:   the Lua call with `function(n, reward) end`;
//   example: the call with docs/reward-shaping.md's example, a penalty on the
//            cart position: reward[i] = reward[i] - 0.1 * x * x, as the actor
//            runs it: bounds-checked arrays, each call under the watchdog;
//   raw:     the same example the old way, on raw FFI pointers with no
//            watchdog (RewardShaper::Arrays::kUnchecked); "checked/raw" is the
//            ratio of the two per env-step, measured in the same run.
// Both Lua variants include what the actor's hook does per step (splitting the
// wire flags into first, terminated and truncated arrays) and what the shaper
// keeps per step for prev_obs and step (a copy of the observations). Variants alternate in
// short slices so machine noise hits them alike; each figure is the fastest of
// its slices (noise from other processes only ever adds time). Goal: at most
// 50 ns per env-step added by the example.
// Usage: shaping_bench [total_seconds=6]
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "scripts/state/call_watchdog.h"
#include "envs/env.h"
#include "rpc/messages.h"
#include "scripts/state/reward_shaper.h"

namespace {

namespace envs = moonseed::envs;
namespace rpc = moonseed::rpc;
namespace scripts = moonseed::scripts;
using moonseed::bench::fastest;
using moonseed::bench::per_call;

constexpr int kSlices = 30;

const char* const kExample =
    "function(n, reward, obs, obs_size, terminated, truncated)\n"
    "  for i = 0, n - 1 do\n"
    "    local x = obs[i * obs_size]\n"
    "    reward[i] = reward[i] - 0.1 * x * x\n"
    "  end\n"
    "end";
const char* const kEmpty = "function(n, reward) end";

// One group of the actor: its envs and the buffers of its StepBatch.
class Group {
 public:
  Group(int n, const char* shaping, scripts::RewardShaper::Arrays arrays = scripts::RewardShaper::Arrays::kChecked,
        scripts::CallWatchdog* watchdog = nullptr)
      : n_(n), watchdog_(watchdog) {
    for (int i = 0; i < n; ++i) envs_.push_back(envs::make_env("CartPole-v1", {}));
    obs_size_ = envs_[0]->spec().observation.numel();
    obs_.resize(static_cast<size_t>(n * obs_size_));
    rewards_.assign(static_cast<size_t>(n), 0.f);
    flags_.assign(static_cast<size_t>(n), 0);
    first_.assign(static_cast<size_t>(n), 0);
    terminated_.assign(static_cast<size_t>(n), 0);
    truncated_.assign(static_cast<size_t>(n), 0);
    ended_.assign(static_cast<size_t>(n), 0);
    for (int i = 0; i < n; ++i) envs_[static_cast<size_t>(i)]->reset(uint64_t(i), obs_at(i));
    if (shaping != nullptr) {
      shaper_ = std::make_unique<scripts::RewardShaper>(1, scripts::RewardShaper::Observations::kFloat32, obs_size_,
                                                        scripts::RewardShaper::shaping_limits(), arrays);
      moonseed::engine::RewardShapingConfig f;
      f.source = shaping;
      f.chunk_name = "=bench";
      const std::string error = shaper_->install(0, f);
      if (!error.empty()) {
        std::fprintf(stderr, "shaping_bench: %s\n", error.c_str());
        std::exit(1);
      }
    }
  }

  // One step of every env of the group, as the actor does it.
  void step(uint64_t t) {
    for (int i = 0; i < n_; ++i) {
      envs::Env& env = *envs_[static_cast<size_t>(i)];
      const auto k = static_cast<size_t>(i);
      if (ended_[k]) {
        env.reset(std::nullopt, obs_at(i));
        rewards_[k] = 0.f;
        flags_[k] = envs::kFirst;
        ended_[k] = 0;
        continue;
      }
      const int32_t action = static_cast<int32_t>((t + static_cast<uint64_t>(i)) & 1);
      envs::StepResult r = env.step(reinterpret_cast<const uint8_t*>(&action), obs_at(i));
      rewards_[k] = r.reward;
      flags_[k] = static_cast<uint8_t>((r.terminated ? envs::kTerminated : 0) | (r.truncated ? envs::kTruncated : 0));
      ended_[k] = r.terminated || r.truncated;
    }
    if (!shaper_) return;
    for (int i = 0; i < n_; ++i) {
      const auto k = static_cast<size_t>(i);
      first_[k] = (flags_[k] & envs::kFirst) ? 1 : 0;
      terminated_[k] = (flags_[k] & envs::kTerminated) ? 1 : 0;
      truncated_[k] = (flags_[k] & envs::kTruncated) ? 1 : 0;
    }
    if (watchdog_ != nullptr) watchdog_->begin(shaper_->position(0));
    const std::string error = shaper_->shape(0, scripts::RewardShaper::GroupStep{n_, 0, rewards_.data(), obs_.data(),
                                                                                first_.data(), terminated_.data(),
                                                                                truncated_.data()});
    if (watchdog_ != nullptr) watchdog_->end();
    if (!error.empty()) {
      std::fprintf(stderr, "shaping_bench: %s\n", error.c_str());
      std::exit(1);
    }
  }

  float checksum() const {
    float sum = 0;
    for (float r : rewards_) sum += r;
    return sum;
  }

 private:
  uint8_t* obs_at(int i) { return reinterpret_cast<uint8_t*>(obs_.data() + static_cast<size_t>(i) * obs_size_); }

  int n_;
  int64_t obs_size_ = 0;
  std::vector<std::unique_ptr<envs::Env>> envs_;
  std::vector<float> obs_;
  std::vector<float> rewards_;
  std::vector<uint8_t> flags_, first_, terminated_, truncated_, ended_;
  std::unique_ptr<scripts::RewardShaper> shaper_;
  scripts::CallWatchdog* watchdog_;
};

// Nanoseconds per env-step over `seconds` of group steps.
double run_slice(Group& group, int n, double seconds, float* sink) {
  uint64_t steps = 0;
  const double per_group_step = per_call(seconds, 256, [&] { group.step(steps++); });
  *sink += group.checksum();
  return per_group_step * 1e9 / n;
}

}  // namespace

int main(int argc, char** argv) {
  const double total = argc > 1 ? std::atof(argv[1]) : 6.0;
  const int sizes[] = {16, 32};
  const double slice = total / (2 * 4 * kSlices);
  float sink = 0;
  std::printf("reward shaping per env-step, CartPole, %d slices of %.3f s per figure (fastest)\n", kSlices, slice);
  std::printf("%5s %10s %10s %10s %10s %14s %14s %14s %12s\n", "envs", "none ns", "empty ns", "example ns",
              "raw ns", "empty +ns", "example +ns", "example/none", "checked/raw");
  bool met = true;
  scripts::CallWatchdog watchdog(1.0, [](const std::string& what, double) {
    std::fprintf(stderr, "shaping_bench: %s ran for more than 1 s\n", what.c_str());
    std::exit(1);
  });
  for (int n : sizes) {
    using Arrays = scripts::RewardShaper::Arrays;
    Group none(n, nullptr), empty(n, kEmpty, Arrays::kChecked, &watchdog),
        example(n, kExample, Arrays::kChecked, &watchdog), raw(n, kExample, Arrays::kUnchecked);
    // Warm up: LuaJIT compiles the loops, caches fill.
    for (Group* g : {&none, &empty, &example, &raw}) run_slice(*g, n, 0.05, &sink);
    std::vector<double> t_none, t_empty, t_example, t_raw;
    for (int s = 0; s < kSlices; ++s) {
      t_none.push_back(run_slice(none, n, slice, &sink));
      t_empty.push_back(run_slice(empty, n, slice, &sink));
      t_example.push_back(run_slice(example, n, slice, &sink));
      t_raw.push_back(run_slice(raw, n, slice, &sink));
    }
    const double base = fastest(t_none), e = fastest(t_empty), x = fastest(t_example), r = fastest(t_raw);
    std::printf("%5d %10.1f %10.1f %10.1f %10.1f %14.1f %14.1f %14.2f %12.2f\n", n, base, e, x, r, e - base,
                x - base, x / base, x / r);
    met = met && x - base <= 50.0;
  }
  std::printf("goal: example adds at most 50 ns per env-step: %s\n", met ? "met" : "NOT met");
  return sink == 12345.f ? 2 : 0;  // keeps the work observable
}
