// Python actors (scripts/python/moonseed/actor.py over libmoonseed_actor.so) as real processes,
// `python3 -m moonseed.actor`, for a scripted learner over a real Unix socket: seeded resets equal
// Moonseed's own CartPole-v1, the envs of tests/python/numpy_envs.py step like it, a Python env
// that raises ends only its episode and the learner hears why, and what the actor cannot run
// (a reset that fails, spaces the learner does not expect, a wrong --envs) ends it with the reason.
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "envs/env.h"
#include "rpc/server.h"
#include "tests/e2e/process.h"
#include "tests/e2e/recording_learner.h"

namespace moonseed::testing {
namespace {

constexpr uint32_t kEnvs = 4;
constexpr uint64_t kSeed = 7;

// Gymnasium's CartPole-v1 step (Euler, 0.02 s) from an observation.
std::vector<double> cartpole_step(const float obs[4], int32_t action) {
  const double x = obs[0], x_dot = obs[1], theta = obs[2], theta_dot = obs[3];
  const double force = action == 1 ? 10.0 : -10.0;
  const double cos = std::cos(theta), sin = std::sin(theta);
  const double temp = (force + 0.05 * theta_dot * theta_dot * sin) / 1.1;
  const double theta_acc = (9.8 * sin - cos * temp) / (0.5 * (4.0 / 3.0 - 0.1 * cos * cos / 1.1));
  const double x_acc = temp - 0.05 * theta_acc * cos / 1.1;
  return {x + 0.02 * x_dot, x_dot + 0.02 * x_acc, theta + 0.02 * theta_dot, theta_dot + 0.02 * theta_acc};
}

class PythonActor : public ::testing::Test {
 protected:
  // A CartPole-v1 run of kEnvs envs (with `options`); even envs always push right, odd ones left.
  // `python`: the run's env.python, as the Welcome carries it ("" = a built-in env).
  void start_learner(envs::EnvOptions options = {}, const std::string& python = "") {
    dir_ = make_temp_dir("moonseed-python-actor");
    rpc::Welcome w;
    w.run_id = "python-actor";
    w.env_id = "CartPole-v1";
    w.env_options = std::move(options);
    w.env_files.python = python;
    w.env_spec = envs::make_env("CartPole-v1")->spec();
    w.num_envs = kEnvs;
    w.num_groups = 2;
    w.seed = kSeed;
    learner_ = std::make_unique<RecordingLearner>(w, [](uint32_t e, size_t) { return e % 2 == 0 ? 1 : 0; });
    server_ = std::make_unique<rpc::Server>(*learner_, rpc::ServerOptions{});
    address_ = server_->listen("unix:" + dir_ + "/learner.sock").to_string();
    server_->start();
  }
  void TearDown() override {
    if (server_) server_->stop();
  }
  // `python3 -m moonseed.actor --connect ADDRESS --env numpy_envs:FACTORY ARGS...`, with the
  // interpreter the project uses and the build's package on PYTHONPATH.
  std::unique_ptr<ChildProcess> start_actor(const std::string& factory, std::vector<std::string> args = {}) {
    ::setenv("PYTHONPATH", (std::string(MOONSEED_BUILD_DIR) + "/python:" + MOONSEED_SOURCE_DIR + "/tests/python").c_str(),
             1);
    std::vector<std::string> argv = {MOONSEED_PYTHON, "-m", "moonseed.actor", "--connect", address_,
                                     "--reconnect-for", "5"};
    if (!factory.empty()) argv.insert(argv.end(), {"--env", "numpy_envs:" + factory});
    argv.insert(argv.end(), args.begin(), args.end());
    log_ = dir_ + "/actor.log";
    return std::make_unique<ChildProcess>(argv, log_);
  }

  std::string dir_, address_, log_;
  std::unique_ptr<RecordingLearner> learner_;
  std::unique_ptr<rpc::Server> server_;
};

TEST_F(PythonActor, StreamsSeededEpisodesOfItsPythonEnvsLikeMoonseedsOwnCartPole) {
  start_learner();
  auto actor = start_actor("cartpole");
  ASSERT_TRUE(learner_->wait_for_steps(40)) << read_file(log_);
  learner_->bye();
  EXPECT_EQ(actor->wait(30), 0) << read_file(log_);
  for (const auto& [env, sent] : learner_->steps()) {
    // The first observation of env e is a reset seeded kSeed + e: the numpy CartPole draws it
    // from the same PCG64 stream as Moonseed's CartPole-v1.
    auto own = envs::make_env("CartPole-v1");
    float expected[4];
    own->reset(kSeed + env, expected);
    ASSERT_EQ(sent[0].flags, envs::kFirst) << "env " << env;
    EXPECT_EQ(0, std::memcmp(expected, sent[0].obs, sizeof expected)) << "env " << env;
    // Then each step is the CartPole dynamics applied to the previous observation with this
    // env's action: the learner's actions reach the right Python env, and its steps come back in
    // order (the env keeps float64 state and sends float32: compare loosely).
    const int32_t action = env % 2 == 0 ? 1 : 0;
    for (size_t t = 1; t < sent.size(); ++t) {
      if (sent[t].flags & envs::kFirst) {
        EXPECT_TRUE(sent[t - 1].flags & (envs::kTerminated | envs::kTruncated)) << "env " << env << " step " << t;
        continue;
      }
      const std::vector<double> next = cartpole_step(sent[t - 1].obs, action);
      for (int k = 0; k < 4; ++k) EXPECT_NEAR(sent[t].obs[k], next[k], 1e-4) << "env " << env << " step " << t;
    }
    size_t ended = 0;
    for (size_t t = 1; t < sent.size(); ++t) {
      if (sent[t].flags & envs::kFirst) continue;
      EXPECT_EQ(sent[t].reward, 1.f);
      ended += (sent[t].flags & envs::kTerminated) ? 1 : 0;
      for (float v : sent[t].obs) EXPECT_TRUE(std::isfinite(v));
    }
    EXPECT_GE(ended, 1u) << "env " << env << ": always pushing one way drops the pole within 40 steps";
  }
}

TEST_F(PythonActor, APythonEnvThatRaisesEndsOnlyItsEpisodeAndTheLearnerHearsWhy) {
  start_learner({{"fail_at_step", 3}});  // every env's 3rd step raises (numpy_envs.cartpole's option)
  auto actor = start_actor("cartpole");
  ASSERT_TRUE(learner_->wait_for_steps(12)) << read_file(log_);
  learner_->bye();
  EXPECT_EQ(actor->wait(30), 0) << read_file(log_);
  const std::vector<std::string> notices = learner_->notices();
  ASSERT_EQ(notices.size(), kEnvs) << read_file(log_);
  for (uint32_t e = 0; e < kEnvs; ++e) {
    EXPECT_NE(std::find(notices.begin(), notices.end(),
                        "env " + std::to_string(e) +
                            ": step failed: RuntimeError: the cart fell off the table (its episode ends as "
                            "truncated; the env resets)"),
              notices.end())
        << "env " << e;
  }
  for (const auto& [env, sent] : learner_->steps()) {
    // Reset, two steps, the failed third (truncated, reward 0, the last good observation), a new
    // episode, and steps again: the actor went on.
    ASSERT_GE(sent.size(), 6u);
    EXPECT_EQ(sent[3].flags, envs::kTruncated) << "env " << env;
    EXPECT_EQ(sent[3].reward, 0.f);
    EXPECT_EQ(0, std::memcmp(sent[3].obs, sent[2].obs, sizeof sent[2].obs));
    EXPECT_EQ(sent[4].flags, envs::kFirst);
    EXPECT_EQ(sent[5].flags & envs::kFirst, 0);
    EXPECT_EQ(sent[5].reward, 1.f);
  }
}

TEST_F(PythonActor, AResetThatFailsEndsTheActorWithTheEnvAndThePythonError) {
  start_learner({{"fail_reset", 1}});
  auto actor = start_actor("cartpole");
  EXPECT_EQ(actor->wait(60), 1);
  EXPECT_NE(read_file(log_).find("env 0: reset failed: OSError: the simulator is not installed"), std::string::npos)
      << read_file(log_);
}

TEST_F(PythonActor, SpacesThatDifferFromTheLearnersAreRefusedWithBothSpecs) {
  start_learner();
  auto actor = start_actor("five_observations");
  EXPECT_EQ(actor->wait(60), 1);
  const std::string log = read_file(log_);
  EXPECT_NE(log.find("env spec mismatch"), std::string::npos) << log;
  EXPECT_NE(log.find("f32[5]"), std::string::npos) << log;
  EXPECT_NE(log.find("f32[4]"), std::string::npos) << log;
}

TEST_F(PythonActor, AnEnvCountThatIsNotTheLearnersIsRefusedSayingWhichToUse) {
  start_learner();
  auto actor = start_actor("cartpole", {"--envs", "3"});
  EXPECT_EQ(actor->wait(60), 1);
  EXPECT_NE(read_file(log_).find("started with --envs 3 but the learner runs 4 envs per actor"), std::string::npos)
      << read_file(log_);
}

TEST_F(PythonActor, WithoutEnvItRunsTheLearnersEnvPythonWithItsOptions) {
  // What `moonseed run` names in env.python reaches the actor in the Welcome: no --env needed.
  start_learner({{"fail_at_step", 3}}, "numpy_envs:cartpole");
  auto actor = start_actor("");
  ASSERT_TRUE(learner_->wait_for_steps(12)) << read_file(log_);
  learner_->bye();
  EXPECT_EQ(actor->wait(30), 0) << read_file(log_);
  // The options reached numpy_envs.cartpole too: its 3rd steps raised.
  EXPECT_FALSE(learner_->notices().empty()) << read_file(log_);
}

TEST_F(PythonActor, WithoutEnvAndWithABuiltInEnvItSaysWhatToGive) {
  start_learner();
  auto actor = start_actor("");
  EXPECT_EQ(actor->wait(60), 1);
  EXPECT_NE(read_file(log_).find("the learner's env 'CartPole-v1' is not a Python env (its experiment sets no "
                                  "env.python): give this actor --env MODULE:FUNCTION, or run moonseed-actor"),
            std::string::npos)
      << read_file(log_);
}

TEST_F(PythonActor, SigtermStopsItCleanly) {
  start_learner();
  auto actor = start_actor("cartpole");
  ASSERT_TRUE(learner_->wait_for_steps(5)) << read_file(log_);
  actor->signal(SIGTERM);
  EXPECT_EQ(actor->wait(30), 0) << read_file(log_);
}

TEST_F(PythonActor, AFactoryThatCannotBeImportedIsAUsageErrorNamingIt) {
  start_learner();
  auto actor = start_actor("no_such_factory");
  EXPECT_EQ(actor->wait(60), 2);
  EXPECT_NE(read_file(log_).find("module numpy_envs has no no_such_factory"), std::string::npos) << read_file(log_);
}

}  // namespace
}  // namespace moonseed::testing
