#include "engine/r2d2_core.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <deque>
#include <memory>
#include <numeric>
#include <vector>

#include "envs/env.h"
#include "rpc/messages.h"

namespace moonseed::engine {
namespace {

R2d2CoreConfig cartpole_config(int64_t lstm) {
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

// Plays `slots` CartPole-v1 envs in this thread against the core, speaking the
// actor protocol's "next step" autoreset, and learns once every `act_per_learn`
// batches of actions.
RunResult run_cartpole(const R2d2CoreConfig& config, int slots, int64_t frames, int act_per_learn) {
  std::vector<std::unique_ptr<envs::Env>> env;
  for (int i = 0; i < slots; ++i) env.push_back(envs::make_env("CartPole-v1"));
  const envs::EnvSpec spec = env[0]->spec();
  R2d2Core core(config, spec, slots, torch::kCPU);
  torch::Tensor obs = torch::zeros({slots, 4});
  float* o = obs.data_ptr<float>();
  std::vector<float> reward(static_cast<size_t>(slots), 0.f);
  std::vector<uint8_t> flags(static_cast<size_t>(slots), rpc::kFirst);
  for (int i = 0; i < slots; ++i) env[static_cast<size_t>(i)]->reset(100 + i, o + 4 * i);
  std::vector<int64_t> all(static_cast<size_t>(slots));
  std::iota(all.begin(), all.end(), 0);
  std::deque<double> returns;
  std::vector<EpisodeResult> finished;
  RunResult out;
  for (int64_t iteration = 0; out.frames < frames; ++iteration) {
    for (int i = 0; i < slots; ++i) core.observe(i, reinterpret_cast<const uint8_t*>(o + 4 * i), reward[i], flags[i]);
    const torch::Tensor actions = core.act(all, obs);
    for (int i = 0; i < slots; ++i) {
      envs::Env& e = *env[static_cast<size_t>(i)];
      if (flags[i] & (rpc::kTerminated | rpc::kTruncated)) {  // the final observation: reset
        e.reset(std::nullopt, o + 4 * i);
        reward[i] = 0;
        flags[i] = rpc::kFirst;
        continue;
      }
      const int32_t a = static_cast<int32_t>(actions[i].item<int64_t>());
      const envs::StepResult r = e.step(&a, o + 4 * i);
      out.frames += 1;
      reward[i] = r.reward;
      flags[i] = r.terminated ? rpc::kTerminated : r.truncated ? rpc::kTruncated : 0;
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

// The whole of R2D2 but the sockets: acting, recording, replay, learning. A
// random policy scores about 22; measured: 245 after 30k frames (1.9k learning
// steps, 15 s of CPU).
TEST(R2d2Core, LearnsCartPoleInProcess) {
  const RunResult r = run_cartpole(cartpole_config(32), 16, 30000, 1);
  EXPECT_GT(r.return_mean, 150) << "after " << r.frames << " frames, " << r.learning_steps << " learning steps";
  EXPECT_GT(r.learning_steps, 1000);
}

TEST(R2d2Core, NothingIsLearnedBeforeTheMinimumFillAndCloseEndsEveryWait) {
  R2d2CoreConfig config = cartpole_config(8);
  config.limiter.min_size_to_sample = 1000;
  const envs::EnvSpec spec = envs::make_env("CartPole-v1")->spec();
  R2d2Core core(config, spec, 2, torch::kCPU);
  EXPECT_FALSE(core.train_step(std::chrono::milliseconds(1)).has_value());
  EXPECT_TRUE(core.wait_for_room(std::chrono::milliseconds(1)));
  core.close();
  EXPECT_FALSE(core.wait_for_room(std::chrono::milliseconds(1000)));
  // Were close() to leave this wait alone, the test would hang until ctest's timeout.
  EXPECT_FALSE(core.train_step(std::chrono::hours(1)).has_value());
}

TEST(R2d2Core, CompletedSequencesAreInsertedWithPrioritiesByTheTrainingThread) {
  R2d2CoreConfig config = cartpole_config(8);
  const envs::EnvSpec spec = envs::make_env("CartPole-v1")->spec();
  R2d2Core core(config, spec, 1, torch::kCPU);
  auto env = envs::make_env("CartPole-v1");
  torch::Tensor obs = torch::zeros({1, 4});
  env->reset(1, obs.data_ptr<float>());
  uint8_t flags = rpc::kFirst;
  float reward = 0;
  // 4 + 16 steps make the first sequence; 8 more the second.
  for (int t = 0; t < 29; ++t) {
    core.observe(0, reinterpret_cast<const uint8_t*>(obs.data_ptr<float>()), reward, flags);
    const int32_t a = static_cast<int32_t>(core.act({0}, obs)[0].item<int64_t>());
    if (flags & (rpc::kTerminated | rpc::kTruncated)) {
      env->reset(std::nullopt, obs.data_ptr<float>());
      reward = 0;
      flags = rpc::kFirst;
      continue;
    }
    const envs::StepResult s = env->step(&a, obs.data_ptr<float>());
    reward = s.reward;
    flags = s.terminated ? rpc::kTerminated : s.truncated ? rpc::kTruncated : 0;
  }
  EXPECT_EQ(core.stats().sequences_queued, 2);
  EXPECT_EQ(core.replay().size(), 0);
  core.train_step(std::chrono::milliseconds(0));
  EXPECT_EQ(core.stats().sequences_inserted, 2);
  EXPECT_EQ(core.replay().size(), 2);
}

}  // namespace
}  // namespace moonseed::engine
