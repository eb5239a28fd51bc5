#include "engine/r2d2/r2d2_core.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <deque>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "envs/env.h"
#include "rpc/messages.h"
#include "tests/engine/r2d2/r2d2_local_run.h"

namespace moonseed::engine {
namespace {

using testing::cartpole_config;
using testing::RunResult;
using testing::run_env;

// The whole of R2D2 but the sockets: acting, recording, replay, learning. A
// random policy scores about 22; measured: 245 after 30k frames (1.9k learning
// steps, 15 s of CPU).
TEST(R2d2Core, LearnsCartPoleInProcess) {
  const RunResult r = run_env("CartPole-v1", cartpole_config(32), 16, 30000, 1);
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

// Either way of giving new sequences their priorities: from the acting net's
// Q-values (the default) or from the learner's nets.
class R2d2CoreInsertion : public ::testing::TestWithParam<bool> {};

TEST_P(R2d2CoreInsertion, CompletedSequencesAreInsertedWithPrioritiesByTheTrainingThread) {
  R2d2CoreConfig config = cartpole_config(8);
  config.acting_priorities = GetParam();
  const envs::EnvSpec spec = envs::make_env("CartPole-v1")->spec();
  R2d2Core core(config, spec, 1, torch::kCPU);
  auto env = envs::make_env("CartPole-v1");
  torch::Tensor obs = torch::zeros({1, 4});
  env->reset(1, obs.data_ptr<float>());
  uint8_t flags = envs::kFirst;
  float reward = 0;
  // 4 + 16 steps make the first sequence; 8 more the second.
  for (int t = 0; t < 29; ++t) {
    core.observe(0, reinterpret_cast<const uint8_t*>(obs.data_ptr<float>()), reward, flags);
    const int32_t a = static_cast<int32_t>(core.act({0}, obs)[0].item<int64_t>());
    if (flags & (envs::kTerminated | envs::kTruncated)) {
      env->reset(std::nullopt, obs.data_ptr<float>());
      reward = 0;
      flags = envs::kFirst;
      continue;
    }
    const envs::StepResult s = env->step(&a, obs.data_ptr<float>());
    reward = s.reward;
    flags = s.terminated ? envs::kTerminated : s.truncated ? envs::kTruncated : 0;
  }
  EXPECT_EQ(core.stats().sequences_queued, 2);
  EXPECT_EQ(core.replay().size(), 0);
  core.train_step(std::chrono::milliseconds(0));
  EXPECT_EQ(core.stats().sequences_inserted, 2);
  EXPECT_EQ(core.replay().size(), 2);
  // Whatever gave them, the priorities are finite and positive: sampling works.
  const SampledBatch sampled = core.replay().sample(2);
  for (double p : sampled.probabilities) {
    EXPECT_TRUE(std::isfinite(p));
    EXPECT_GT(p, 0);
  }
}

INSTANTIATE_TEST_SUITE_P(ActingOrLearner, R2d2CoreInsertion, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? std::string("Acting") : std::string("Learner");
                         });

TEST(R2d2Core, EvaluationSlotsActWithTheirOwnEpsilonAndFeedNoReplay) {
  R2d2CoreConfig config = cartpole_config(8);
  config.epsilon_base = 1;        // training slots: every action random
  config.eval_slots = {false, true, false};
  config.eval_epsilon = 0;        // the evaluation slot: never random
  const envs::EnvSpec spec = envs::make_env("CartPole-v1")->spec();
  R2d2Core core(config, spec, 3, torch::kCPU);
  // Constant observations and no episode end: 28 steps per slot make 2
  // sequences of 4 + 16 steps every 8 in each recorded slot.
  const torch::Tensor obs = torch::full({3, 4}, 0.01f);
  for (int t = 0; t < 29; ++t) {
    for (int slot = 0; slot < 3; ++slot) {
      core.observe(slot, reinterpret_cast<const uint8_t*>(obs[slot].data_ptr<float>()), t == 0 ? 0.f : 1.f,
                   t == 0 ? envs::kFirst : 0);
    }
    core.act({0, 1, 2}, obs);
  }
  EXPECT_EQ(core.stats().explored_actions, 2 * 29);
  EXPECT_EQ(core.stats().sequences_queued, 2 * 2);
}

TEST(R2d2Core, NewExplorationParametersReachTheTrainingSlotsAtTheNextAct) {
  R2d2CoreConfig config = cartpole_config(8);
  config.epsilon_base = 1;  // every action random
  config.eval_slots = {false, true};
  config.eval_epsilon = 0;
  const envs::EnvSpec spec = envs::make_env("CartPole-v1")->spec();
  R2d2Core core(config, spec, 2, torch::kCPU);
  const torch::Tensor obs = torch::full({2, 4}, 0.01f);
  auto play = [&](int steps, bool first) {
    for (int t = 0; t < steps; ++t) {
      for (int slot = 0; slot < 2; ++slot) {
        core.observe(slot, reinterpret_cast<const uint8_t*>(obs[slot].data_ptr<float>()), 0.f,
                     first && t == 0 ? envs::kFirst : 0);
      }
      core.act({0, 1}, obs);
    }
  };
  play(10, true);
  EXPECT_EQ(core.stats().explored_actions, 10);  // the training slot only
  core.set_exploration(0, 7);                    // greedy from now on
  play(10, false);
  EXPECT_EQ(core.stats().explored_actions, 10);
  core.set_exploration(1, 0);                    // the evaluation slot keeps eval_epsilon = 0
  play(10, false);
  EXPECT_EQ(core.stats().explored_actions, 20);
  EXPECT_THROW(core.set_exploration(1.5, 7), std::invalid_argument);
}

TEST(R2d2Core, EvaluationSlotsMustLeaveATrainingSlot) {
  R2d2CoreConfig config = cartpole_config(8);
  config.eval_slots = {true, true};
  const envs::EnvSpec spec = envs::make_env("CartPole-v1")->spec();
  EXPECT_THROW(R2d2Core(config, spec, 2, torch::kCPU), std::invalid_argument);
  config.eval_slots = {false, false, true};
  EXPECT_THROW(R2d2Core(config, spec, 2, torch::kCPU), std::invalid_argument);
}

}  // namespace
}  // namespace moonseed::engine
