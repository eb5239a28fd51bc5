// The learner as an actor sees it: a real rpc::Server on a Unix socket, a
// real rpc::Client stepping CartPole-shaped observations through it.
#include "engine/learner.h"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <variant>

#include <gtest/gtest.h>

#include "engine/actor_config.h"
#include "rpc/client.h"
#include "rpc/server.h"

namespace moonseed::engine {
namespace {

ExperimentConfig small_config() {
  ExperimentConfig c;
  c.topology.actors = 1;
  c.topology.envs_per_actor = 2;
  c.topology.groups_per_actor = 1;
  c.learner.batch = 1;
  c.learner.unroll = 2;
  c.learner.queue_capacity = 4;
  c.inference.max_batch = 2;
  c.inference.deadline_us = 100;
  c.inference.io_threads = 1;
  c.model.hidden = {8};
  c.optimizer.lr = 1e-3;
  return c;
}

// A learner serving one Unix socket in a fresh directory.
struct Served {
  explicit Served(const ExperimentConfig& config)
      : dir(std::filesystem::temp_directory_path() / ("moonseed-learner-" + std::to_string(::getpid()))),
        learner(config, "test-run"),
        server(learner, options()) {
    std::filesystem::create_directories(dir);
    address = server.listen("unix:" + (dir / "l.sock").string()).to_string();
    server.start();
    learner.start();
  }
  ~Served() {
    server.stop();
    learner.stop();
    std::filesystem::remove_all(dir);
  }
  static rpc::ServerOptions options() {
    rpc::ServerOptions o;
    o.io_threads = 1;
    return o;
  }
  std::filesystem::path dir;
  Learner learner;
  rpc::Server server;
  std::string address;
};

// Sends one step for both envs and waits for the actions; returns every
// ConfigUpdate version seen on the way (0 when none).
uint64_t step(rpc::Client& client, uint64_t seq, uint64_t config_version, bool first) {
  rpc::StepBatch b;
  b.seq = seq;
  b.count = 2;
  b.config_version = config_version;
  b.observations.assign(2 * 4 * sizeof(float), 0);
  b.rewards.assign(2, first ? 0.f : 1.f);
  b.flags.assign(2, first ? rpc::kFirst : 0);
  client.send(b);
  uint64_t update = 0;
  while (true) {
    rpc::Incoming in = client.receive(std::chrono::seconds(10));
    if (auto* u = std::get_if<rpc::ConfigUpdate>(&in)) {
      update = u->config_version;
      continue;
    }
    EXPECT_TRUE(std::holds_alternative<rpc::ActionBatch>(in)) << "variant " << in.index();
    return update;
  }
}

TEST(Learner, HotConfigReachesActorsAndTheNextTrainingStep) {
  Served s(small_config());
  rpc::Client client = rpc::Client::connect(s.address, std::chrono::seconds(5));
  EXPECT_EQ(client.hello(rpc::Hello{}).config_version, 0u);

  uint64_t seq = 0;
  uint64_t version = 0;
  for (int i = 0; i < 8; ++i) step(client, ++seq, version, i == 0);
  ASSERT_EQ(s.learner.stats().config_version, 0u);

  ExperimentConfig hot = small_config();
  hot.optimizer.lr = 2.5e-4;
  hot.vtrace.entropy_cost = 0.02;
  s.learner.set_hot_config(hot, 1);
  EXPECT_EQ(s.learner.stats().config_version, 1u);
  // The actor hears of it on its stream, and stamps its next batches.
  for (int i = 0; i < 200 && version == 0; ++i) version = step(client, ++seq, version, false);
  EXPECT_EQ(version, 1u);
  // Training takes it at the top of a step: keep acting until one ran.
  LearnerStats st;
  for (int i = 0; i < 2000; ++i) {
    step(client, ++seq, version, false);
    st = s.learner.stats();
    if (st.applied_config_version == 1 && st.optimizer_steps > 0 && st.learning_rate == 2.5e-4) break;
  }
  EXPECT_EQ(st.applied_config_version, 1u);
  EXPECT_DOUBLE_EQ(st.learning_rate, 2.5e-4);
  EXPECT_DOUBLE_EQ(st.entropy_cost, 0.02);
  client.close();
}

TEST(Learner, AnActorThatConnectsAfterAReloadIsWelcomedWithTheCurrentVersion) {
  Served s(small_config());
  s.learner.set_hot_config(small_config(), 3);
  rpc::Client client = rpc::Client::connect(s.address, std::chrono::seconds(5));
  EXPECT_EQ(client.hello(rpc::Hello{}).config_version, 3u);
  client.close();
}

RewardShapingConfig doubling() {
  RewardShapingConfig f;
  f.source = "function(n, reward) for i = 0, n - 1 do reward[i] = 2 * reward[i] end end";
  f.chunk_name = "@exp.lua";
  f.first_line = 9;
  return f;
}

RewardShapingConfig shaping_in(const std::string& payload) {
  std::string error;
  const std::optional<ActorConfig> config = decode_actor_config(payload, &error);
  EXPECT_TRUE(config.has_value()) << error;
  return config ? config->reward_shaping : RewardShapingConfig{};
}

TEST(Learner, TheWelcomeCarriesTheUnrollLengthAndTheRunsRewardShaping) {
  ExperimentConfig c = small_config();
  c.learner.unroll = 7;
  c.reward_shaping = doubling();
  Served s(c);
  rpc::Client client = rpc::Client::connect(s.address, std::chrono::seconds(5));
  const rpc::Welcome welcome = client.hello(rpc::Hello{});
  EXPECT_EQ(welcome.unroll_length, 7u);
  EXPECT_EQ(shaping_in(welcome.payload), doubling());
  client.close();
}

TEST(Learner, AHotConfigSendsItsRewardShapingToConnectedAndLaterActors) {
  ExperimentConfig two_actors = small_config();
  two_actors.topology.actors = 2;  // the later actor needs no free slot from the first
  Served s(two_actors);
  rpc::Client client = rpc::Client::connect(s.address, std::chrono::seconds(5));
  EXPECT_EQ(shaping_in(client.hello(rpc::Hello{}).payload), RewardShapingConfig{});
  ExperimentConfig shaped = two_actors;
  shaped.reward_shaping = doubling();
  s.learner.set_hot_config(shaped, 1);
  const rpc::Incoming in = client.receive(std::chrono::seconds(10));
  ASSERT_TRUE(std::holds_alternative<rpc::ConfigUpdate>(in)) << "variant " << in.index();
  EXPECT_EQ(std::get<rpc::ConfigUpdate>(in).config_version, 1u);
  EXPECT_EQ(shaping_in(std::get<rpc::ConfigUpdate>(in).payload), doubling());
  // Another actor: its Welcome has what runs now.
  rpc::Client again = rpc::Client::connect(s.address, std::chrono::seconds(5));
  const rpc::Welcome welcome = again.hello(rpc::Hello{});
  EXPECT_EQ(welcome.config_version, 1u);
  EXPECT_EQ(shaping_in(welcome.payload), doubling());
  again.close();
  client.close();
}

TEST(Learner, AnActorNoticeIsKeptForTakeNoticesNamingTheActor) {
  Served s(small_config());
  rpc::Client client = rpc::Client::connect(s.address, std::chrono::seconds(5));
  client.hello(rpc::Hello{});
  ::testing::internal::CaptureStderr();
  client.send(rpc::ActorNotice{0, "reward_shaping failed at exp.lua:12: boom; keeping the previous function"});
  std::vector<std::string> notices;
  for (int i = 0; i < 1000 && notices.empty(); ++i) {
    notices = s.learner.take_notices();
    if (notices.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const std::string printed = ::testing::internal::GetCapturedStderr();
  ASSERT_EQ(notices.size(), 1u);
  EXPECT_EQ(notices[0], "actor 0: reward_shaping failed at exp.lua:12: boom; keeping the previous function");
  EXPECT_NE(printed.find("moonseed: " + notices[0]), std::string::npos) << printed;
  EXPECT_TRUE(s.learner.take_notices().empty()) << "taken once";
  client.close();
}

TEST(Learner, AHotConfigVersionMustGrow) {
  Served s(small_config());
  s.learner.set_hot_config(small_config(), 2);
  EXPECT_THROW(s.learner.set_hot_config(small_config(), 2), std::invalid_argument);
  EXPECT_THROW(s.learner.set_hot_config(small_config(), 1), std::invalid_argument);
}

}  // namespace
}  // namespace moonseed::engine
