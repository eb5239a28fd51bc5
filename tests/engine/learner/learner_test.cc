// The learner as an actor sees it: a real rpc::Server on a Unix socket, a
// real rpc::Client stepping CartPole-shaped observations through it.
#include "engine/learner/learner.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include <gtest/gtest.h>

#include "engine/config/actor_config.h"
#include "engine/learner/checkpoint.h"
#include "engine/r2d2/config/r2d2_config.h"
#include "engine/run/checkpoint_manifest.h"
#include "engine/vtrace/config/vtrace_config.h"
#include "envs/wrappers/wrapper_spec.h"
#include "tests/engine/learner/served.h"
#include "rpc/client.h"
#include "rpc/server.h"

namespace moonseed::engine {
namespace {

// Sends one step of both envs (zero observations, these flags and rewards)
// and waits for the actions; returns the last ConfigUpdate version seen on the
// way (0 when none) and the actions in `actions` when given.
uint64_t exchange(rpc::Client& client, uint64_t seq, uint64_t config_version, const std::vector<uint8_t>& flags,
                  float reward, std::vector<int32_t>* actions = nullptr) {
  rpc::StepBatch b;
  b.seq = seq;
  b.count = 2;
  b.config_version = config_version;
  b.observations.assign(2 * 4 * sizeof(float), 0);
  b.rewards.assign(2, reward);
  b.flags = flags;
  client.send(b);
  uint64_t update = 0;
  while (true) {
    rpc::Incoming in = client.receive(std::chrono::seconds(10));
    if (auto* u = std::get_if<rpc::ConfigUpdate>(&in)) {
      update = u->config_version;
      continue;
    }
    auto* reply = std::get_if<rpc::ActionBatch>(&in);
    EXPECT_TRUE(reply != nullptr) << "variant " << in.index();
    if (reply != nullptr && actions != nullptr) {
      actions->resize(reply->actions.size() / sizeof(int32_t));
      std::memcpy(actions->data(), reply->actions.data(), actions->size() * sizeof(int32_t));
    }
    return update;
  }
}

uint64_t step(rpc::Client& client, uint64_t seq, uint64_t config_version, bool first) {
  return exchange(client, seq, config_version, std::vector<uint8_t>(2, first ? envs::kFirst : 0), first ? 0.f : 1.f);
}

// The learner's threads carry names (top -H, perf, bench/scaling_curves.py read them).
TEST(Learner, ItsThreadsAreNamed) {
  Served s(small_config());
  const auto names = [] {
    std::vector<std::string> all;
    for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
      std::ifstream in(task.path() / "comm");
      std::string name;
      std::getline(in, name);
      all.push_back(name);
    }
    return all;
  };
  const std::vector<std::string> expected = {"ms-infer", "ms-train", "ms-prefetch", "ms-io"};
  // A thread names itself once it runs: give the new ones a moment.
  std::vector<std::string> seen;
  for (int i = 0; i < 500; ++i) {
    seen = names();
    if (std::all_of(expected.begin(), expected.end(),
                    [&](const std::string& e) { return std::find(seen.begin(), seen.end(), e) != seen.end(); })) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  for (const std::string& e : expected) EXPECT_NE(std::find(seen.begin(), seen.end(), e), seen.end()) << e;
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
  hot.section<engine::VTraceConfig>().entropy_cost = 0.02;
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
  EXPECT_DOUBLE_EQ(st.metric("entropy_cost"), 0.02);
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

// Events of `learner` until one of `kind` arrives (at most 10 s), in order.
std::vector<ActorEvent> events_until(Learner& learner, ActorEvent::Kind kind) {
  std::vector<ActorEvent> events;
  for (int i = 0; i < 1000; ++i) {
    for (ActorEvent& e : learner.take_actor_events()) events.push_back(std::move(e));
    if (!events.empty() && events.back().kind == kind) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return events;
}

TEST(Learner, AnActorsJoinNoticeAndLeaveAreEventsNamingItsHostAndPid) {
  Served s(small_config());
  rpc::Client client = rpc::Client::connect(s.address, std::chrono::seconds(5));
  rpc::Hello hello;
  hello.host = "node-7";
  hello.pid = 4242;
  ::testing::internal::CaptureStderr();
  client.hello(hello);
  client.send(rpc::ActorNotice{0, "reward_shaping failed at exp.lua:12: boom; keeping the previous function"});
  std::vector<ActorEvent> events = events_until(s.learner, ActorEvent::Kind::kNotice);
  client.close();
  for (ActorEvent& e : events_until(s.learner, ActorEvent::Kind::kLeft)) events.push_back(std::move(e));
  const std::string printed = ::testing::internal::GetCapturedStderr();
  ASSERT_EQ(events.size(), 3u) << printed;
  EXPECT_EQ(events[0].kind, ActorEvent::Kind::kJoined);
  EXPECT_EQ(describe(events[0]), "actor 0 joined (node-7, pid 4242)");
  EXPECT_EQ(events[1].kind, ActorEvent::Kind::kNotice);
  EXPECT_EQ(describe(events[1]), "actor 0: reward_shaping failed at exp.lua:12: boom; keeping the previous function");
  EXPECT_EQ(events[2].kind, ActorEvent::Kind::kLeft);
  EXPECT_EQ(events[2].host, "node-7");
  EXPECT_EQ(events[2].pid, 4242);
  EXPECT_EQ(events[2].text, "actor said bye: actor closing");
  for (const ActorEvent& e : events) EXPECT_NE(printed.find("moonseed: " + describe(e)), std::string::npos) << printed;
  EXPECT_TRUE(s.learner.take_actor_events().empty()) << "taken once";
}

// Each slot's count of env steps (resets excluded), connections, host and pid,
// as two actors join, step, one leaves and comes back to its slot.
TEST(Learner, TheActorListCountsEachSlotsFramesAndConnections) {
  ExperimentConfig config = small_config();
  config.topology.actors = 2;
  Served s(config);
  EXPECT_TRUE(s.learner.actor_list(256).actors.empty()) << "no slot was ever connected";
  auto connect = [&](const std::string& host, int32_t pid, int32_t id) {
    rpc::Client client = rpc::Client::connect(s.address, std::chrono::seconds(5));
    rpc::Hello hello;
    hello.host = host;
    hello.pid = pid;
    hello.actor_id = id;
    EXPECT_EQ(client.hello(hello).actor_id, id);
    return client;
  };
  rpc::Client a = connect("node-a", 11, 0);
  rpc::Client b = connect("node-b", 22, 1);
  step(a, 1, 0, /*first=*/true);  // resets: no frames
  for (uint64_t seq = 2; seq <= 4; ++seq) step(a, seq, 0, false);
  step(b, 1, 0, true);
  step(b, 2, 0, false);
  ActorList list = s.learner.actor_list(256);
  ASSERT_EQ(list.actors.size(), 2u);
  EXPECT_EQ(list.not_listed, 0);
  const ActorStatus& first = list.actors[0];
  EXPECT_EQ(first.id, 0);
  EXPECT_TRUE(first.connected);
  EXPECT_EQ(first.host, "node-a");
  EXPECT_EQ(first.pid, 11);
  EXPECT_EQ(first.frames, 6u) << "3 steps of 2 envs after their resets";
  EXPECT_EQ(first.connections, 1u);
  EXPECT_GE(first.connected_s, 0);
  EXPECT_EQ(list.actors[1].id, 1);
  EXPECT_EQ(list.actors[1].host, "node-b");
  EXPECT_EQ(list.actors[1].frames, 2u);

  a.close();
  for (int i = 0; i < 1000 && s.learner.actor_list(256).actors[0].connected; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  list = s.learner.actor_list(256);
  EXPECT_FALSE(list.actors[0].connected);
  EXPECT_TRUE(std::isnan(list.actors[0].connected_s));
  EXPECT_EQ(list.actors[0].host, "node-a") << "the last connection's";
  EXPECT_EQ(list.actors[0].frames, 6u);

  rpc::Client again = connect("node-c", 33, 0);
  step(again, 1, 0, true);
  step(again, 2, 0, false);
  list = s.learner.actor_list(256);
  EXPECT_TRUE(list.actors[0].connected);
  EXPECT_EQ(list.actors[0].host, "node-c");
  EXPECT_EQ(list.actors[0].pid, 33);
  EXPECT_EQ(list.actors[0].connections, 2u);
  EXPECT_EQ(list.actors[0].frames, 8u) << "counted over both connections";

  list = s.learner.actor_list(1);
  ASSERT_EQ(list.actors.size(), 1u);
  EXPECT_EQ(list.actors[0].id, 0);
  EXPECT_EQ(list.not_listed, 1);
  again.close();
  b.close();
}

TEST(Learner, AHungActorIsToldToReconnectAndItsSlotIsFreeAtOnce) {
  ExperimentConfig config = small_config();
  Served s(config);
  rpc::Client hung = rpc::Client::connect(s.address, std::chrono::seconds(5));
  hung.hello(rpc::Hello{});
  // It sends one step, gets its actions, then owes the next and says nothing.
  exchange(hung, 1, 0, {envs::kFirst, envs::kFirst}, 0);
  EXPECT_TRUE(s.learner.release_hung_actors(60).empty()) << "a minute has not passed";
  EXPECT_TRUE(s.learner.release_hung_actors(0).empty()) << "a timeout of 0 is off";
  std::vector<HungActor> released;
  for (int i = 0; i < 500 && released.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    released = s.learner.release_hung_actors(0.05);
  }
  ASSERT_EQ(released.size(), 1u);
  EXPECT_EQ(released[0].id, 0);
  EXPECT_GE(released[0].silent_s, released[0].timeout_s);
  // The slot is free before the hung connection is closed: a replacement gets it.
  rpc::Client replacement = rpc::Client::connect(s.address, std::chrono::seconds(5));
  rpc::Hello same_id;
  same_id.actor_id = 0;
  EXPECT_EQ(replacement.hello(same_id).actor_id, 0);
  // The hung one, when it reads again, finds a Bye that asks it to reconnect.
  rpc::Incoming incoming = hung.receive(std::chrono::seconds(10));
  const auto* bye = std::get_if<rpc::Bye>(&incoming);
  ASSERT_NE(bye, nullptr);
  EXPECT_TRUE(bye->reconnect);
  EXPECT_NE(bye->reason.find("no step batch for"), std::string::npos) << bye->reason;
  const std::vector<ActorEvent> events = events_until(s.learner, ActorEvent::Kind::kJoined);
  bool reported = false;
  for (const ActorEvent& e : events) reported |= e.kind == ActorEvent::Kind::kHung && e.actor_id == 0;
  EXPECT_TRUE(reported);
  // Its own disconnect does not take the replacement's slot.
  hung.close();
  exchange(replacement, 1, 0, {envs::kFirst, envs::kFirst}, 0);
  EXPECT_EQ(s.learner.stats().actors_connected, 1);
  EXPECT_EQ(s.learner.actor_step_batches(0), 2u);
  // Both batches held reset observations only: no progress, as a local actor's supervisor counts it.
  EXPECT_EQ(s.learner.actor_env_steps(0), 0u);
  replacement.close();
}

// A client that says Hello and then nothing holds its slot only until the
// hung-actor check: it owes the learner its first step batch.
TEST(Learner, AClientThatOnlySaysHelloLosesItsSlotAtTheActorTimeout) {
  Served s(small_config());
  rpc::Client silent = rpc::Client::connect(s.address, std::chrono::seconds(5));
  EXPECT_EQ(silent.hello(rpc::Hello{}).actor_id, 0);
  ::testing::internal::CaptureStderr();
  std::vector<HungActor> released;
  for (int i = 0; i < 500 && released.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    released = s.learner.release_hung_actors(0.05);
  }
  ::testing::internal::GetCapturedStderr();
  ASSERT_EQ(released.size(), 1u);
  EXPECT_EQ(released[0].id, 0);
  rpc::Incoming incoming = silent.receive(std::chrono::seconds(10));
  const auto* bye = std::get_if<rpc::Bye>(&incoming);
  ASSERT_NE(bye, nullptr);
  EXPECT_TRUE(bye->reconnect);
}

TEST(Learner, WrongAuthTokensAreRefusedAndCounted) {
  Served s(small_config(), /*checkpoint=*/"", /*auth_token=*/"right");
  ::testing::internal::CaptureStderr();
  for (int i = 0; i < 2; ++i) {
    rpc::Client client = rpc::Client::connect(s.address, std::chrono::seconds(5));
    rpc::Hello hello;
    hello.auth_token = "guess";
    EXPECT_THROW(client.hello(hello), rpc::HandshakeRefused);
  }
  rpc::Client client = rpc::Client::connect(s.address, std::chrono::seconds(5));
  rpc::Hello hello;
  hello.auth_token = "right";
  EXPECT_EQ(client.hello(hello).actor_id, 0);
  ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(s.learner.stats().auth_failures, 2);
}

TEST(Learner, AHotConfigVersionMustGrow) {
  Served s(small_config());
  s.learner.set_hot_config(small_config(), 2);
  EXPECT_THROW(s.learner.set_hot_config(small_config(), 2), std::invalid_argument);
  EXPECT_THROW(s.learner.set_hot_config(small_config(), 1), std::invalid_argument);
}

// A config built in C++ skips the loader; the learner checks the same rules
// (engine/config/config_problems.h) before it builds anything.
TEST(Learner, RefusesAConfigTheLoaderWouldReject) {
  ExperimentConfig no_actors = small_config();
  no_actors.topology.actors = 0;
  EXPECT_THROW(Learner(no_actors, "test-run"), std::invalid_argument);
  ExperimentConfig more_groups_than_envs = small_config();
  more_groups_than_envs.topology.groups_per_actor = 3;
  try {
    Learner learner(more_groups_than_envs, "test-run");
    ADD_FAILURE() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("topology.groups_per_actor: groups_per_actor (3) exceeds envs_per_actor (2)"),
              std::string::npos)
        << e.what();
  }
}

// Three episodes of both envs: x0 (first), x1, x2, x3 final (terminated), rewards 1.
void play_three_episodes(rpc::Client& client) {
  uint64_t seq = 0;
  std::vector<int32_t> actions;
  for (int episode = 0; episode < 3; ++episode) {
    exchange(client, ++seq, 0, {envs::kFirst, envs::kFirst}, 0, &actions);
    for (int t = 1; t <= 2; ++t) exchange(client, ++seq, 0, {0, 0}, 1, &actions);
    exchange(client, ++seq, 0, {envs::kTerminated, envs::kTerminated}, 1, &actions);
    ASSERT_EQ(actions.size(), 2u);
    for (int32_t a : actions) EXPECT_TRUE(a == 0 || a == 1) << a;  // CartPole: Discrete(2)
  }
}

// The learner's stats once `done` holds of them, or after 10 s of polling.
template <typename Done>
LearnerStats stats_once(Served& s, Done done) {
  LearnerStats st;
  for (int i = 0; i < 1000; ++i) {
    st = s.learner.stats();
    if (done(st)) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return st;
}

// V-trace with env 1 of the actor evaluating: both envs act and count their episodes apart, and
// only env 0's steps are trained on.
TEST(Learner, VtraceCountsEvaluationEpisodesApartAndTrainsOnlyOnTrainingEnvs) {
  ExperimentConfig config = small_config();
  config.topology.eval_envs_per_actor = 1;
  Served s(config);
  rpc::Client client = rpc::Client::connect(s.address, std::chrono::seconds(5));
  client.hello(rpc::Hello{});
  play_three_episodes(client);
  // Env 0's 12 observations make 5 unrolls of 2 steps (x2, x4, ... x10 end one), 8 of their
  // steps valid (final observations are not); env 1's would make as many again.
  const LearnerStats st = stats_once(s, [](const LearnerStats& st) {
    return st.episodes == 3 && st.eval_episodes == 3 && st.optimizer_steps >= 5;
  });
  EXPECT_EQ(st.frames, 2 * 9);  // every env step received, evaluation envs' too
  EXPECT_EQ(st.episodes, 3);
  EXPECT_EQ(st.eval_episodes, 3);
  EXPECT_DOUBLE_EQ(st.return_mean, 3);
  EXPECT_DOUBLE_EQ(st.eval_return_mean, 3);
  EXPECT_EQ(st.optimizer_steps, 5);
  EXPECT_EQ(st.trained_frames, 8);
  client.close();
}

// R2D2 (algo = "r2d2") behind the same learner: env 1 of the actor evaluates.
ExperimentConfig small_r2d2_config() {
  ExperimentConfig c = small_config();
  c.algo = "r2d2";
  c.model.kind = "layers";
  c.model.layers = {{"linear", 8}, {"relu"}, {"lstm", 4}};
  c.section<engine::R2d2Config>().burn_in = 1;
  c.section<engine::R2d2Config>().trace = 2;
  c.section<engine::R2d2Config>().period = 1;
  c.section<engine::R2d2Config>().batch = 1;
  c.section<engine::R2d2Config>().capacity = 64;
  c.section<engine::R2d2Config>().min_fill = 1;
  c.section<engine::R2d2Config>().head_hidden = 4;
  c.section<engine::R2d2Config>().target_period = 1;
  c.topology.eval_envs_per_actor = 1;
  return c;
}

TEST(Learner, R2d2CountsEvaluationEpisodesApartAndReplaysOnlyTrainingEnvs) {
  Served s(small_r2d2_config());
  rpc::Client client = rpc::Client::connect(s.address, std::chrono::seconds(5));
  client.hello(rpc::Hello{});
  play_three_episodes(client);
  // Episodes are counted just after the reply, and the training thread
  // inserts what the steps completed: wait for both.
  const LearnerStats st = stats_once(s, [](const LearnerStats& st) {
    return st.episodes == 3 && st.eval_episodes == 3 && st.metric("replay_size") > 0 && st.optimizer_steps > 0;
  });
  EXPECT_EQ(st.episodes, 3);
  EXPECT_EQ(st.eval_episodes, 3);
  EXPECT_DOUBLE_EQ(st.return_mean, 3);
  EXPECT_DOUBLE_EQ(st.eval_return_mean, 3);
  // Env 0 alone: 4 steps per episode, sequences of 3 starting at every step
  // within an episode's recording; env 1 would double it.
  EXPECT_GT(st.metric("replay_size"), 0);
  EXPECT_LE(st.metric("replay_size"), 3 * 4);
  EXPECT_GT(st.optimizer_steps, 0);
  client.close();
}

TEST(Learner, R2d2TakesHotExplorationAtTheNextBatchAfterATrainingStep) {
  ExperimentConfig config = small_r2d2_config();
  config.section<engine::R2d2Config>().epsilon_base = 1;  // env 0 explores on every step; env 1 evaluates (1e-3)
  config.section<engine::R2d2Config>().eval_epsilon = 0;
  Served s(config);
  rpc::Client client = rpc::Client::connect(s.address, std::chrono::seconds(5));
  client.hello(rpc::Hello{});
  uint64_t seq = 0;
  exchange(client, ++seq, 0, {envs::kFirst, envs::kFirst}, 0);
  for (int t = 0; t < 9; ++t) exchange(client, ++seq, 0, {0, 0}, 1);
  EXPECT_EQ(s.learner.stats().metric("explored_actions"), 10);

  ExperimentConfig greedy = config;
  greedy.section<engine::R2d2Config>().epsilon_base = 0;
  s.learner.set_hot_config(greedy, 1);
  // The training thread takes it at the top of a step and hands it over at its
  // end; the inference thread applies it at the batch after that.
  int64_t steps_when_taken = -1;
  for (int i = 0; i < 2000; ++i) {
    exchange(client, ++seq, 1, {0, 0}, 1);
    const LearnerStats st = s.learner.stats();
    if (st.applied_config_version == 1 && steps_when_taken < 0) steps_when_taken = st.optimizer_steps;
    if (steps_when_taken >= 0 && st.optimizer_steps > steps_when_taken) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_GE(steps_when_taken, 0) << "the hot config was never applied";
  exchange(client, ++seq, 1, {0, 0}, 1);
  const int64_t explored = s.learner.stats().metric("explored_actions");
  for (int t = 0; t < 20; ++t) exchange(client, ++seq, 1, {0, 0}, 1);
  EXPECT_EQ(s.learner.stats().metric("explored_actions"), explored);
  client.close();
}

TEST(Learner, TheWelcomeAndEvaluationUseTheWrappedEnv) {
  ExperimentConfig c = small_config();
  c.env.wrappers = envs::parse_wrapper_list("time_limit max_steps=5;frame_stack n=2;clip_reward high=0.5");
  Served s(c);
  rpc::Client client = rpc::Client::connect(s.address, std::chrono::seconds(5));
  const rpc::Welcome welcome = client.hello(rpc::Hello{});
  EXPECT_EQ(welcome.env_spec.observation.shape, (std::vector<int64_t>{8}));
  EXPECT_EQ(welcome.env_spec.max_episode_steps, 5);
  EXPECT_EQ(welcome.env_wrappers, "time_limit max_steps=5;frame_stack n=2;clip_reward low=-1 high=0.5");
  client.close();
  // In-process evaluation steps its CartPoles under the same wrappers: cut at 5 steps (a pole
  // cannot fall sooner than 8), and returns count the env's own rewards, not the clipped ones.
  const Evaluation e = s.learner.evaluate(3, 7, /*greedy=*/true, /*max_steps=*/50);
  ASSERT_EQ(e.returns.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(e.lengths[i], 5);
    EXPECT_TRUE(e.truncated[i]);
    EXPECT_EQ(e.returns[i], 5.0);
  }
}

TEST(Learner, R2d2EvaluatesWithItsRecurrentNetAndCheckpointsTheReplayBesideTheModel) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("moonseed-r2d2-ckpt-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "ckpt-1.pt").string();
  int64_t replay_size = 0;
  {
    Served s(small_r2d2_config());
    rpc::Client client = rpc::Client::connect(s.address, std::chrono::seconds(5));
    client.hello(rpc::Hello{});
    uint64_t seq = 0;
    exchange(client, ++seq, 0, {envs::kFirst, envs::kFirst}, 0);
    for (int t = 0; t < 12; ++t) exchange(client, ++seq, 0, {0, 0}, 1);
    // Until the training thread inserted every completed sequence.
    for (int i = 0; i < 500; ++i) {
      const LearnerStats st = s.learner.stats();
      if (st.metric("replay_size") > 0 && st.queue_size == 0) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    replay_size = s.learner.stats().metric("replay_size");
    ASSERT_GT(replay_size, 0);
    const Evaluation e = s.learner.evaluate(3, 7, /*greedy=*/true, /*max_steps=*/50);
    ASSERT_EQ(e.returns.size(), 3u);
    for (size_t i = 0; i < 3; ++i) {
      EXPECT_GE(e.lengths[i], 8);  // CartPole cannot fall sooner
      EXPECT_LE(e.lengths[i], 50);
      EXPECT_EQ(e.returns[i], static_cast<double>(e.lengths[i]));
    }
    s.learner.save_checkpoint(path, 1.5);
    client.close();
  }
  EXPECT_TRUE(std::filesystem::exists(path));
  EXPECT_TRUE(std::filesystem::exists(path + ".replay"));
  Learner restored(small_r2d2_config(), "test-run");
  const Counters c = restored.restore(path);
  EXPECT_EQ(c.elapsed_s, 1.5);
  EXPECT_EQ(restored.stats().metric("replay_size"), replay_size);
  std::filesystem::remove_all(dir);
}

// The manifest comes last, over the model file and its replay; a checkpoint
// whose manifest cannot be written (here: its .partial name is taken by a
// directory, a real open() failure) is removed whole, so that no unsealed
// checkpoint is left to be taken for a good one.
TEST(Learner, ACheckpointIsSealedLastAndOneThatCannotBeSealedLeavesNoFile) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("moonseed-sealed-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string sealed = (dir / "ckpt-1.pt").string();
  const std::string unsealable = (dir / "ckpt-2.pt").string();
  Learner learner(small_r2d2_config(), "test-run");
  learner.save_checkpoint(sealed, 1.0);
  const CheckpointCheck check = verify_checkpoint(sealed);
  EXPECT_TRUE(check.sealed);
  EXPECT_TRUE(check.good()) << check.damage;
  std::ifstream in(manifest_path(sealed));
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(parse_manifest(text, manifest_path(sealed)),
            (std::vector<ManifestEntry>{checksum_file(sealed), checksum_file(sealed + ".replay")}));

  std::filesystem::create_directories(unsealable + ".sum.partial");
  try {
    learner.save_checkpoint(unsealable, 2.0);
    ADD_FAILURE() << "saved without its manifest";
  } catch (const CheckpointError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot write " + unsealable + ".sum.partial: Is a directory"),
              std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("its checkpoint " + unsealable + " is removed"), std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(std::filesystem::exists(unsealable));
  EXPECT_FALSE(std::filesystem::exists(unsealable + ".replay"));
  EXPECT_FALSE(std::filesystem::exists(unsealable + ".sum"));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace moonseed::engine
