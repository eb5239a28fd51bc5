// Potential-based reward shaping, checked against the formula: a real
// `moonseed actor` process runs examples/cartpole_potential.lua's
// reward_shaping on seeded CartPole envs for a scripted learner (this test,
// over a real Unix socket), and every reward it sends must equal
//   r + gamma * Phi(s') - Phi(s),  Phi(s) = -(x^2 + theta^2),  Phi(terminal s') = 0
// computed here from the observations it sent, across episode ends
// (terminated and truncated) and resets (the reset step is left alone).
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "engine/config/actor_config.h"
#include "engine/vtrace/config/vtrace_config.h"
#include "envs/env.h"
#include "rpc/server.h"
#include "scripts/loader/experiment_loader.h"
#include "tests/e2e/process.h"
#include "tests/e2e/recording_learner.h"

namespace moonseed::testing {
namespace {

const std::string kBinary = MOONSEED_BINARY;
const std::string kExample = std::string(MOONSEED_SOURCE_DIR) + "/examples/cartpole_potential.lua";

constexpr uint32_t kEnvs = 6;
constexpr int32_t kActorId = 2;
constexpr int kEpisodeLimit = 15;  // max_episode_steps: balanced envs are truncated

// Welcomes one actor to a CartPole run of kEnvs envs with the example's reward_shaping: even envs
// always push left (they fall: terminated), odd envs alternate (they stay up until the time limit:
// truncated).
RecordingLearner formula_learner(std::string payload) {
  rpc::Welcome w;
  w.run_id = "formula";
  w.actor_id = kActorId;
  w.env_id = "CartPole-v1";
  w.env_options = {{"max_episode_steps", kEpisodeLimit}};
  w.env_spec = envs::make_env("CartPole-v1", w.env_options)->spec();
  w.num_envs = kEnvs;
  w.num_groups = 2;
  w.seed = 11;
  w.config_version = 1;
  w.unroll_length = 5;
  w.payload = std::move(payload);
  return RecordingLearner(w, [](uint32_t e, size_t steps) { return e % 2 == 0 ? 0 : static_cast<int32_t>(steps % 2); });
}

// Phi(s) = -(x^2 + theta^2), from the observation the actor sent.
double phi(const Sent& s) {
  const double x = s.obs[0], theta = s.obs[2];
  return -(x * x + theta * theta);
}

TEST(PotentialShaping, EveryRewardAnActorSendsIsOnePlusGammaPhiNextMinusPhiAcrossEpisodeEnds) {
  const engine::ExperimentConfig config = scripts::load_experiment(kExample);
  ASSERT_FALSE(config.reward_shaping.source.empty());
  const double gamma = config.section<engine::VTraceConfig>().gamma;
  ASSERT_EQ(gamma, 0.99) << "the example writes gamma 0.99 into its function: keep them equal";

  RecordingLearner learner = formula_learner(engine::encode_actor_config(engine::actor_config_of(config)));
  rpc::Server server(learner, rpc::ServerOptions{});
  const std::string dir = make_temp_dir("moonseed-formula");
  const std::string address = server.listen("unix:" + dir + "/l.sock").to_string();
  server.start();
  const std::string log = dir + "/actor.log";
  ChildProcess actor({kBinary, "actor", "--connect", address, "--reconnect-for", "5"}, log);
  // Four episodes of the balanced envs at least: many ends of both kinds.
  ASSERT_TRUE(learner.wait_for_steps(4 * (kEpisodeLimit + 1))) << read_file(log);
  learner.bye();
  EXPECT_EQ(actor.wait(30), std::optional<int>(0)) << read_file(log);
  server.stop();
  EXPECT_TRUE(learner.notices().empty()) << learner.notices().front();

  int terminated = 0, truncated = 0, resets = 0, shaped = 0;
  for (const auto& [env, sent] : learner.steps()) {
    ASSERT_TRUE(sent.at(0).flags & envs::kFirst) << "env " << env << " starts with its reset observation";
    for (size_t t = 0; t < sent.size(); ++t) {
      const Sent& now = sent[t];
      const std::string where = "env " + std::to_string(env) + " step " + std::to_string(t);
      if (now.flags & envs::kFirst) {
        EXPECT_EQ(now.reward, 0.f) << where << ": a reset step is not shaped";
        ++resets;
        continue;
      }
      const bool ended = (now.flags & envs::kTerminated) != 0;
      terminated += ended ? 1 : 0;
      truncated += (now.flags & envs::kTruncated) ? 1 : 0;
      const double expected = 1.0 + gamma * (ended ? 0.0 : phi(now)) - phi(sent[t - 1]);
      EXPECT_NEAR(now.reward, expected, 1e-5) << where;
      ++shaped;
    }
  }
  EXPECT_GT(terminated, 0);
  EXPECT_GT(truncated, 0);
  EXPECT_GT(resets, static_cast<int>(kEnvs)) << "resets after episode ends, not only the first ones";
  EXPECT_GT(shaped, 0);
}

// The example as a user runs it: the learner's actors shape with it and the
// policy learns to keep the pole up (a random one lasts about 22 steps).
// return_mean counts shaped rewards, close to the episode length here (the
// shaping adds a few units at most), so the run stops at return_mean 200.
TEST(PotentialShaping, TheExampleTrainsCartPoleWellPastARandomPolicy) {
  TrainingRun run(kExample, {"log.interval_s=0.5", "stop.return_mean=200", "stop.seconds=150"}, "moonseed-potential");
  ChildProcess learner(run.args({}), run.log);
  ASSERT_EQ(learner.wait(240), std::optional<int>(0)) << read_file(run.log);
  double longest = 0;
  for (const MetricsRow& row : run.metrics()) {
    if (row.count("length_mean")) longest = std::max(longest, row.at("length_mean"));
  }
  EXPECT_GE(longest, 100) << read_file(run.log);
  EXPECT_EQ(read_file(run.log).find("reward_shaping failed"), std::string::npos) << read_file(run.log);
}

}  // namespace
}  // namespace moonseed::testing
