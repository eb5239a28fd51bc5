// Nothing a client can send crashes the learner: a real learner on a Unix
// socket, real rpc::Clients sending StepBatches no honest actor sends. Each
// bad one closes that client's connection with a reason; another actor keeps
// getting its actions. A model whose weights are NaN stops the learner with a
// reason instead of sampling from NaN.
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <limits>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "engine/learner/actor_event.h"
#include "engine/learner/checkpoint.h"
#include "engine/learner/optimizer.h"
#include "envs/env.h"
#include "models/policy_net.h"
#include "rpc/client.h"
#include "tests/engine/learner/served.h"

namespace moonseed::engine {
namespace {

constexpr int kObs = 4;  // CartPole's observation elements

ExperimentConfig two_actors() {
  ExperimentConfig c = small_config();
  c.topology.actors = 2;
  c.inference.max_batch = 4;
  return c;
}

// Connects and says Hello as actor `id`, retrying while its slot is still
// held by a connection the learner has not seen close yet.
rpc::Client connect_as(const std::string& address, int id) {
  for (int attempt = 0;; ++attempt) {
    rpc::Client client = rpc::Client::connect(address, std::chrono::seconds(5));
    rpc::Hello hello;
    hello.actor_id = id;
    try {
      client.hello(hello, std::chrono::seconds(10));
      return client;
    } catch (const std::exception& e) {
      if (attempt >= 500) throw;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
}

// A step of envs [env_begin, env_begin + count) with zero observations.
rpc::StepBatch batch_of(uint64_t seq, uint32_t env_begin, uint32_t count, uint8_t flags) {
  rpc::StepBatch b;
  b.seq = seq;
  b.env_begin = env_begin;
  b.count = count;
  b.observations.assign(count * kObs * sizeof(float), 0);
  b.rewards.assign(count, flags & envs::kFirst ? 0.f : 1.f);
  b.flags.assign(count, flags);
  return b;
}

void set_observation(rpc::StepBatch& b, uint32_t env, int element, float value) {
  std::memcpy(&b.observations[(env * kObs + element) * sizeof(float)], &value, sizeof value);
}

// The next ActionBatch, skipping ConfigUpdates; fails the test on anything else.
rpc::ActionBatch actions_of(rpc::Client& client) {
  while (true) {
    rpc::Incoming in = client.receive(std::chrono::seconds(10));
    if (std::holds_alternative<rpc::ConfigUpdate>(in)) continue;
    auto* reply = std::get_if<rpc::ActionBatch>(&in);
    EXPECT_NE(reply, nullptr) << "variant " << in.index();
    return reply != nullptr ? std::move(*reply) : rpc::ActionBatch{};
  }
}

// Reads until the learner's Bye (actions for earlier batches may come first)
// and returns its reason; "" when the connection ended without one.
std::string bye_reason(rpc::Client& client) {
  for (int i = 0; i < 100; ++i) {
    rpc::Incoming in = client.receive(std::chrono::seconds(10));
    if (auto* bye = std::get_if<rpc::Bye>(&in)) return bye->reason;
    if (std::holds_alternative<rpc::ActionBatch>(in) || std::holds_alternative<rpc::ConfigUpdate>(in)) continue;
    ADD_FAILURE() << "no Bye: variant " << in.index();
    return "";
  }
  return "";
}

// An honest actor: one step of both its envs, answered.
void honest_step(rpc::Client& client, uint64_t seq, bool first) {
  client.send(batch_of(seq, 0, 2, first ? envs::kFirst : 0));
  EXPECT_EQ(actions_of(client).seq, seq);
}

struct BadCase {
  std::string name;
  // Sends what the case is about after the Hello.
  std::function<void(rpc::Client&)> send;
  std::string reason;  // a part of the Bye's reason
};

std::vector<BadCase> bad_cases() {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  return {
      {"the same StepBatch twice",
       [](rpc::Client& c) {
         const rpc::StepBatch b = batch_of(1, 0, 2, envs::kFirst);
         c.send(b);
         c.send(b);
       },
       "env 0 sent a step before its last one was answered"},
      {"a step before its actions came",
       [](rpc::Client& c) {
         c.send(batch_of(1, 0, 2, envs::kFirst));
         c.send(batch_of(2, 1, 1, 0));
       },
       "env 1 sent a step before its last one was answered"},
      {"envs outside its own",
       [](rpc::Client& c) { c.send(batch_of(1, 1, 2, envs::kFirst)); },
       "envs [1, 3) outside this actor's 2 envs"},
      {"no envs", [](rpc::Client& c) { c.send(batch_of(1, 0, 0, envs::kFirst)); }, "StepBatch"},
      {"observations for fewer envs than it counts",
       [](rpc::Client& c) {
         rpc::StepBatch b = batch_of(1, 0, 2, envs::kFirst);
         b.observations.resize(kObs * sizeof(float));
         c.send(b);
       },
       "observation bytes for 2 envs"},
      {"one reward too few",
       [](rpc::Client& c) {
         rpc::StepBatch b = batch_of(1, 0, 2, envs::kFirst);
         b.rewards.pop_back();
         c.send(b);
       },
       "StepBatch"},  // the decoder may refuse it first
      {"a NaN observation",
       [nan](rpc::Client& c) {
         rpc::StepBatch b = batch_of(1, 0, 2, envs::kFirst);
         set_observation(b, 1, 2, nan);
         c.send(b);
       },
       "env 1 sent a non-finite observation (nan at element 2)"},
      {"an infinite observation",
       [inf](rpc::Client& c) {
         rpc::StepBatch b = batch_of(1, 0, 2, envs::kFirst);
         set_observation(b, 0, 3, -inf);
         c.send(b);
       },
       "env 0 sent a non-finite observation (-inf at element 3)"},
      {"a NaN reward after a good step",
       [nan](rpc::Client& c) {
         honest_step(c, 1, true);
         rpc::StepBatch b = batch_of(2, 0, 2, 0);
         b.rewards[1] = nan;
         c.send(b);
       },
       "env 1 sent a non-finite reward (nan)"},
      {"an infinite reward",
       [inf](rpc::Client& c) {
         rpc::StepBatch b = batch_of(1, 0, 2, envs::kFirst);
         b.rewards[0] = inf;
         c.send(b);
       },
       "env 0 sent a non-finite reward (inf)"},
  };
}

// Batches wait long for more envs (a deadline of 0.2 s, room for 8 envs), so
// a batch sent right after another is read before the first is answered.
ExperimentConfig slow_batches() {
  ExperimentConfig c = two_actors();
  c.inference.max_batch = 8;
  c.inference.deadline_us = 200000;
  return c;
}

TEST(HostileActor, EachBadStepBatchClosesOnlyItsConnectionWithTheReason) {
  Served s(slow_batches());
  rpc::Client honest = connect_as(s.address, 1);
  uint64_t seq = 0;
  honest_step(honest, ++seq, true);
  for (const BadCase& bad : bad_cases()) {
    SCOPED_TRACE(bad.name);
    rpc::Client client = connect_as(s.address, 0);
    bad.send(client);
    const std::string reason = bye_reason(client);
    EXPECT_NE(reason.find(bad.reason), std::string::npos) << reason;
    // The other actor never notices.
    honest_step(honest, ++seq, false);
  }
  // A well-behaved client in the same slot is served again.
  rpc::Client again = connect_as(s.address, 0);
  honest_step(again, 1, true);
  honest_step(again, 2, false);
  EXPECT_EQ(s.learner.stats().failure, "");
}

// An actor's words (its Hello's host, a notice, its Bye's reason) reach the learner's lines
// and metrics: a newline or an escape sequence in them must not forge a line of the run's
// output or recolour a terminal.
TEST(HostileActor, ControlCharactersInAnActorsWordsNeverReachALineAsThemselves) {
  Served s(two_actors());
  rpc::Client client = rpc::Client::connect(s.address, std::chrono::seconds(5));
  rpc::Hello hello;
  hello.actor_id = 0;
  hello.host = "box\nmoonseed: stopped: by the actor (FORGED)\x1b[31m";
  client.hello(hello, std::chrono::seconds(10));
  rpc::ActorNotice notice;
  notice.text = "shaping failed\r\nmoonseed: FORGED\x07";
  client.send(notice);
  client.close("gone\nmoonseed: FORGED\x7f");
  std::vector<ActorEvent> events;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  const auto left = [&] {
    for (const ActorEvent& e : events) {
      if (e.kind == ActorEvent::Kind::kLeft) return true;
    }
    return false;
  };
  while (!left() && std::chrono::steady_clock::now() < deadline) {
    for (ActorEvent& e : s.learner.take_actor_events()) events.push_back(std::move(e));
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(left()) << "the actor's leave was never seen";
  bool noticed = false;
  for (const ActorEvent& e : events) {
    const std::string line = describe(e);
    SCOPED_TRACE(line);
    for (const char c : line) {
      EXPECT_FALSE(static_cast<unsigned char>(c) < 0x20 || c == 0x7f) << "control character " << int(c);
    }
    if (e.kind != ActorEvent::Kind::kNotice) {
      EXPECT_NE(line.find("box\\x0amoonseed"), std::string::npos);
    }
    if (e.kind == ActorEvent::Kind::kNotice) noticed = line.find("\\x0d\\x0a") != std::string::npos;
    if (e.kind == ActorEvent::Kind::kLeft) {
      EXPECT_NE(line.find("gone\\x0amoonseed: FORGED\\x7f"), std::string::npos);
    }
  }
  EXPECT_TRUE(noticed) << "the notice never arrived escaped";
}

TEST(HostileActor, ObservationsThatOverflowTheNetCostOnlyTheirConnection) {
  // Finite but huge: through relu layers they make the outputs infinite; the
  // weights are fine, so the observations are to blame, not the model.
  ExperimentConfig c = two_actors();
  c.model.activation = "relu";
  Served s(c);
  rpc::Client honest = connect_as(s.address, 1);
  honest_step(honest, 1, true);
  rpc::Client client = connect_as(s.address, 0);
  rpc::StepBatch b = batch_of(1, 0, 2, envs::kFirst);
  for (int k = 0; k < kObs; ++k) set_observation(b, 1, k, std::numeric_limits<float>::max());
  client.send(b);
  const std::string reason = bye_reason(client);
  EXPECT_NE(reason.find("the observation of env 1 made the model's outputs non-finite"), std::string::npos)
      << reason;
  for (uint64_t seq = 2; seq < 6; ++seq) honest_step(honest, seq, false);
  EXPECT_EQ(s.learner.stats().failure, "");
}

TEST(HostileActor, RepeatedStepsFromManyConnectionsNeverReachTheAgent) {
  // Each bad connection's first batch waits in the batcher with the repeat
  // already read; an honest actor's step after each one empties the batcher.
  Served s(slow_batches());
  rpc::Client honest = connect_as(s.address, 1);
  uint64_t seq = 0;
  honest_step(honest, ++seq, true);
  for (int i = 0; i < 20; ++i) {
    rpc::Client client = connect_as(s.address, 0);
    const rpc::StepBatch b = batch_of(1, 0, 2, i % 2 ? envs::kFirst : 0);
    client.send(b);
    client.send(b);
    EXPECT_NE(bye_reason(client).find("before its last one was answered"), std::string::npos);
    honest_step(honest, ++seq, false);
  }
  EXPECT_EQ(s.learner.stats().failure, "");
}

TEST(HostileActor, AnActorKilledMidStepAndBackAtOnceKeepsWorking) {
  // Its dead connection's request waits in the batcher (a long deadline) when
  // the new connection's first steps for the same envs arrive.
  ExperimentConfig c = small_config();
  c.inference.max_batch = 4;
  c.inference.deadline_us = 20000;
  Served s(c);
  for (int i = 0; i < 60; ++i) {
    rpc::Client client = connect_as(s.address, 0);
    client.send(batch_of(1, 0, 2, i % 2 ? envs::kFirst : 0));
    client.close();
  }
  rpc::Client survivor = connect_as(s.address, 0);
  honest_step(survivor, 1, true);
  for (uint64_t seq = 2; seq < 10; ++seq) honest_step(survivor, seq, false);
  EXPECT_EQ(s.learner.stats().failure, "");
  EXPECT_EQ(s.learner.stats().actors_connected, 1);
}

TEST(HostileActor, ReplaceUsesZeroForNonFiniteValuesAndCountsThem) {
  ExperimentConfig c = small_config();
  c.inference.nonfinite = "replace";
  Served s(c);
  rpc::Client client = connect_as(s.address, 0);
  rpc::StepBatch b = batch_of(1, 0, 2, envs::kFirst);
  set_observation(b, 0, 0, std::numeric_limits<float>::quiet_NaN());
  set_observation(b, 1, 3, std::numeric_limits<float>::infinity());
  client.send(b);
  EXPECT_EQ(actions_of(client).seq, 1u);
  b = batch_of(2, 0, 2, 0);
  b.rewards[1] = -std::numeric_limits<float>::infinity();
  client.send(b);
  EXPECT_EQ(actions_of(client).seq, 2u);
  EXPECT_EQ(s.learner.stats().nonfinite_replaced, 3);
}

TEST(HostileActor, AModelWithNanWeightsStopsTheLearnerWithAReason) {
  const ExperimentConfig c = small_config();
  // A checkpoint whose weights are NaN, as a diverged training would leave them.
  const std::string path =
      (std::filesystem::temp_directory_path() / ("moonseed-nan-" + std::to_string(::getpid()) + ".pt")).string();
  {
    models::PolicyNet net(c.model, envs::make_env(c.env.id, c.env.options)->spec());
    torch::NoGradGuard no_grad;
    for (torch::Tensor& p : net->parameters()) p.fill_(std::numeric_limits<float>::quiet_NaN());
    auto optimizer = make_optimizer(c.optimizer, net->parameters());
    save_checkpoint(path, *net, *optimizer, Counters{});
  }
  Served s(c, path);
  std::filesystem::remove(path);
  rpc::Client client = connect_as(s.address, 0);
  client.send(batch_of(1, 0, 2, envs::kFirst));
  std::string failure;
  for (int i = 0; i < 1000 && failure.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    failure = s.learner.stats().failure;
  }
  EXPECT_NE(failure.find("the model's outputs went non-finite at optimizer step 0"), std::string::npos) << failure;
  EXPECT_NE(failure.find("lower optimizer.lr"), std::string::npos) << failure;
  // No checkpoint holds such weights.
  EXPECT_THROW(s.learner.save_checkpoint(path, 1.0), CheckpointError);
  EXPECT_FALSE(std::filesystem::exists(path));
}

}  // namespace
}  // namespace moonseed::engine
