// A whole R2D2 agent without the sockets: envs played in the calling thread
// against an R2d2Core, speaking the actor protocol's "next step" autoreset.
// Used by tests/engine/r2d2_core_test.cc and bench/r2d2_memory_bench.cc; free
// of gtest so the bench can include it.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "engine/r2d2/r2d2_core.h"
#include "envs/env.h"
#include "rpc/messages.h"

namespace moonseed::engine::testing {

// Small-net settings that learn CartPole-v1 in-process in tens of thousands of frames.
inline R2d2CoreConfig cartpole_config(int64_t lstm) {
  R2d2CoreConfig c;
  c.trainer.burn_in = 4;
  c.trainer.trace = 16;
  c.trainer.n_step.n = 3;
  c.trainer.n_step.gamma = 0.99;
  c.trainer.target_period = 100;
  c.replay.capacity = 4000;
  c.replay.period = 8;
  c.replay.seed = 5;
  c.limiter.min_size_to_sample = 64;
  c.batch = 32;
  c.net.torso = {models::LayerSpec{"linear", 64}, models::LayerSpec{"relu"}};
  c.net.lstm = lstm;
  c.net.head_hidden = 64;
  c.optimizer.kind = "adam";
  c.optimizer.lr = 1e-3;
  c.optimizer.eps = 1e-3;
  c.seed = 11;
  return c;
}

struct RunResult {
  double return_mean = 0;  // over the last 20 episodes
  int64_t frames = 0;
  int64_t learning_steps = 0;
};

// Plays `slots` envs of `env_id` in this thread against the core, speaking the
// actor protocol's "next step" autoreset, and learns once every `act_per_learn`
// batches of actions.
inline RunResult run_env(const std::string& env_id, const R2d2CoreConfig& config, int slots, int64_t frames,
                  int act_per_learn) {
  std::vector<std::unique_ptr<envs::Env>> env;
  for (int i = 0; i < slots; ++i) env.push_back(envs::make_env(env_id));
  const envs::EnvSpec spec = env[0]->spec();
  const int64_t size = spec.observation.numel();
  R2d2Core core(config, spec, slots, torch::kCPU);
  torch::Tensor obs = torch::zeros({slots, size});
  float* o = obs.data_ptr<float>();
  std::vector<float> reward(static_cast<size_t>(slots), 0.f);
  std::vector<uint8_t> flags(static_cast<size_t>(slots), envs::kFirst);
  for (int i = 0; i < slots; ++i) env[static_cast<size_t>(i)]->reset(100 + i, o + size * i);
  std::vector<int64_t> all(static_cast<size_t>(slots));
  std::iota(all.begin(), all.end(), 0);
  std::deque<double> returns;
  std::vector<EpisodeResult> finished;
  RunResult out;
  for (int64_t iteration = 0; out.frames < frames; ++iteration) {
    for (int i = 0; i < slots; ++i) core.observe(i, reinterpret_cast<const uint8_t*>(o + size * i), reward[i], flags[i]);
    const torch::Tensor actions = core.act(all, obs);
    for (int i = 0; i < slots; ++i) {
      envs::Env& e = *env[static_cast<size_t>(i)];
      if (flags[i] & (envs::kTerminated | envs::kTruncated)) {  // the final observation: reset
        e.reset(std::nullopt, o + size * i);
        reward[i] = 0;
        flags[i] = envs::kFirst;
        continue;
      }
      const int32_t a = static_cast<int32_t>(actions[i].item<int64_t>());
      const envs::StepResult r = e.step(&a, o + size * i);
      out.frames += 1;
      reward[i] = r.reward;
      flags[i] = r.terminated ? envs::kTerminated : r.truncated ? envs::kTruncated : 0;
    }
    core.take_finished_episodes(finished);
    for (const EpisodeResult& f : finished) {
      returns.push_back(f.episode_return);
      if (returns.size() > 20) returns.pop_front();
    }
    finished.clear();
    if (iteration % act_per_learn == 0) core.train_step(std::chrono::milliseconds(0));
  }
  out.return_mean = returns.empty() ? 0 : std::accumulate(returns.begin(), returns.end(), 0.0) / returns.size();
  out.learning_steps = core.stats().learning_steps;
  return out;
}

}  // namespace moonseed::engine::testing
