// The actor loop against a scripted learner over a real Unix socket: when a
// new config is taken, how batches are stamped, what the group hook sees, and
// how the hook's problems reach the learner.
#include "actor/actor_loop.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "envs/env.h"
#include "envs/wrappers/wrappers.h"
#include "rpc/server.h"

namespace moonseed::actor {
namespace {

constexpr uint32_t kUnroll = 5;
constexpr uint32_t kEnvs = 4;
constexpr uint32_t kGroups = 2;
constexpr int32_t kActorId = 3;

// What the learner received from one group, in order.
struct Received {
  uint64_t config_version;
  std::vector<float> rewards;
  std::vector<uint8_t> flags;
  std::vector<float> env_rewards;
};

// Admits one actor to a CartPole run of kEnvs envs in kGroups groups with
// unroll length kUnroll and config version 1 (payload "1"); answers every
// StepBatch at once with action 0 and records it.
class ScriptedLearner : public rpc::ActorService {
 public:
  rpc::Admission on_hello(const rpc::Hello&) override {
    rpc::Admission a;
    a.accepted = true;
    a.welcome.run_id = "test-run";
    a.welcome.actor_id = kActorId;
    a.welcome.env_id = "CartPole-v1";
    a.welcome.env_spec = envs::make_env("CartPole-v1", {})->spec();
    a.welcome.env_wrappers = wrappers;
    if (!wrapped_spec.id.empty()) a.welcome.env_spec = wrapped_spec;
    a.welcome.num_envs = kEnvs;
    a.welcome.num_groups = kGroups;
    a.welcome.seed = 7;
    a.welcome.config_version = 1;
    a.welcome.unroll_length = kUnroll;
    a.welcome.payload = "1";
    return a;
  }
  void on_connect(std::shared_ptr<rpc::ActorLink> link) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      link_ = std::move(link);
      ++connects_;
    }
    changed_.notify_all();
  }
  void on_steps(const std::shared_ptr<rpc::ActorLink>& link, rpc::StepBatch&& batch) override {
    rpc::ActionBatch reply;
    reply.seq = batch.seq;
    reply.actions.assign(batch.count * sizeof(int32_t), 0);
    {
      std::lock_guard<std::mutex> lock(mu_);
      groups_[batch.seq & 0xff].push_back(Received{batch.config_version, batch.rewards, batch.flags, batch.env_rewards});
    }
    changed_.notify_all();
    link->send_actions(std::move(reply));
  }
  void on_disconnect(const std::shared_ptr<rpc::ActorLink>&, const std::string&) override {}
  // Set before the actor starts: the Welcome's env_wrappers, and the spec it announces when set.
  std::string wrappers;
  envs::EnvSpec wrapped_spec;
  void on_notice(const std::shared_ptr<rpc::ActorLink>&, const rpc::ActorNotice& notice) override {
    std::lock_guard<std::mutex> lock(mu_);
    notices_.push_back(notice);
    changed_.notify_all();
  }

  // Waits (at most 20 s) until `done` holds over what was received.
  template <typename Done>
  bool wait(Done done) {
    std::unique_lock<std::mutex> lock(mu_);
    return changed_.wait_for(lock, std::chrono::seconds(20), [&] { return done(groups_, notices_); });
  }
  void send_config(uint64_t version, const std::string& payload) {
    std::shared_ptr<rpc::ActorLink> link;
    {
      std::lock_guard<std::mutex> lock(mu_);
      link = link_;
    }
    ASSERT_NE(link, nullptr);
    link->send_config(rpc::ConfigUpdate{version, payload});
  }
  // The newest connection's link.
  std::shared_ptr<rpc::ActorLink> link() {
    std::lock_guard<std::mutex> lock(mu_);
    return link_;
  }
  // Waits (at most 20 s) until the actor has connected `n` times.
  bool wait_connects(int n) {
    std::unique_lock<std::mutex> lock(mu_);
    return changed_.wait_for(lock, std::chrono::seconds(20), [&] { return connects_ >= n; });
  }
  std::map<uint64_t, std::vector<Received>> groups() {
    std::lock_guard<std::mutex> lock(mu_);
    return groups_;
  }
  std::vector<rpc::ActorNotice> notices() {
    std::lock_guard<std::mutex> lock(mu_);
    return notices_;
  }

 private:
  std::mutex mu_;
  std::condition_variable changed_;
  std::shared_ptr<rpc::ActorLink> link_;                 // guarded by mu_
  int connects_ = 0;                                     // guarded by mu_
  std::map<uint64_t, std::vector<Received>> groups_;     // guarded by mu_, by group index
  std::vector<rpc::ActorNotice> notices_;                // guarded by mu_
};

using Groups = std::map<uint64_t, std::vector<Received>>;
using Notices = std::vector<rpc::ActorNotice>;

// Adds 1000 * (the payload as a number) to every reward, so the learner can
// tell which config shaped a batch; payload "fail" makes on_step fail.
class MarkingHook : public GroupHook {
 public:
  void start(const envs::EnvSpec& spec, uint32_t num_groups) override {
    marks_.assign(num_groups, 0);
    failing_.assign(num_groups, false);
  }
  std::string apply_config(uint32_t group, uint64_t, const std::string& payload) override {
    failing_[group] = payload == "fail";
    if (!failing_[group]) marks_[group] = std::stof(payload);
    return "";
  }
  std::string on_step(uint32_t group, uint32_t count, uint32_t, float* rewards, const uint8_t*,
                      const uint8_t*) override {
    if (failing_[group]) return "shaping failed at exp.lua:3: boom";
    for (uint32_t i = 0; i < count; ++i) rewards[i] += 1000 * marks_[group];
    return "";
  }

 private:
  std::vector<float> marks_;
  std::vector<bool> failing_;
};

// Records what each on_step call was told: group, first_env, count and flags.
class RecordingHook : public GroupHook {
 public:
  struct Call {
    uint32_t group, first_env, count;
    std::vector<uint8_t> flags;
  };
  void start(const envs::EnvSpec&, uint32_t) override {}
  std::string apply_config(uint32_t, uint64_t, const std::string&) override { return ""; }
  std::string on_step(uint32_t group, uint32_t count, uint32_t first_env, float*, const uint8_t*,
                      const uint8_t* flags) override {
    std::lock_guard<std::mutex> lock(mu_);
    calls_.push_back(Call{group, first_env, count, std::vector<uint8_t>(flags, flags + count)});
    return "";
  }
  std::vector<Call> calls() {
    std::lock_guard<std::mutex> lock(mu_);
    return calls_;
  }

 private:
  std::mutex mu_;
  std::vector<Call> calls_;  // guarded by mu_
};

class ActorLoop : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("moonseed-actor-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    address_ = server_.listen("unix:" + (dir_ / "l.sock").string()).to_string();
    server_.start();
  }
  void TearDown() override {
    stop_ = true;
    if (actor_.joinable()) actor_.join();
    server_.stop();
    std::filesystem::remove_all(dir_);
  }
  void start_actor(std::shared_ptr<GroupHook> hook) {
    options_.address = address_;
    options_.verbose = false;
    options_.reconnect_for_s = 1;
    options_.hook = std::move(hook);
    actor_ = std::thread([this] { exit_ = run_actor(options_, stop_); });
  }
  static bool each_group_sent(const Groups& g, size_t n) {
    return g.size() == kGroups && g.at(0).size() >= n && g.at(1).size() >= n;
  }
  // Every group has sent `n` batches stamped with `version`.
  static bool each_group_stamped(const Groups& g, uint64_t version, size_t n) {
    if (g.size() != kGroups) return false;
    for (const auto& [group, batches] : g) {
      size_t stamped = 0;
      for (const Received& b : batches) stamped += b.config_version == version ? 1 : 0;
      if (stamped < n) return false;
    }
    return true;
  }

  ScriptedLearner learner_;
  rpc::Server server_{learner_, rpc::ServerOptions{}};
  std::filesystem::path dir_;
  std::string address_;
  ActorOptions options_;
  std::atomic<bool> stop_{false};
  std::thread actor_;
  std::optional<ActorExit> exit_;  // written by actor_, read after joining it
};

// Batches whose envs all start afresh (kFirst): each group's first batch of a connection.
size_t fresh_starts(const Groups& groups) {
  size_t n = 0;
  for (const auto& [group, batches] : groups) {
    for (const Received& b : batches) {
      bool all_first = true;
      for (uint8_t f : b.flags) all_first &= (f & envs::kFirst) != 0;
      n += all_first ? 1 : 0;
    }
  }
  return n;
}

TEST_F(ActorLoop, AByeThatAsksToReconnectStartsANewConnectionAndAPlainByeEndsTheActor) {
  start_actor(nullptr);
  ASSERT_TRUE(learner_.wait([](const Groups& g, const Notices&) { return each_group_sent(g, 2); }));
  learner_.link()->send_reconnect("no step batch for 31.0 s (timeout 30.0 s)");
  ASSERT_TRUE(learner_.wait_connects(2)) << "the actor did not come back";
  // The second connection starts every env afresh: each group's first batch is all resets.
  EXPECT_TRUE(learner_.wait([](const Groups& g, const Notices&) { return fresh_starts(g) >= 2 * kGroups; }));
  learner_.link()->send_bye("run finished");
  actor_.join();
  ASSERT_TRUE(exit_.has_value());
  EXPECT_EQ(*exit_, ActorExit::kBye);
}

TEST_F(ActorLoop, ANewConfigIsTakenAtEachGroupsNextUnrollBoundaryAndStampedFromThere) {
  start_actor(std::make_shared<MarkingHook>());
  ASSERT_TRUE(learner_.wait([](const Groups& g, const Notices&) { return each_group_sent(g, 7); }));
  learner_.send_config(2, "2");
  ASSERT_TRUE(learner_.wait([](const Groups& g, const Notices&) { return each_group_stamped(g, 2, 2 * kUnroll); }));
  stop_ = true;
  actor_.join();

  for (const auto& [group, batches] : learner_.groups()) {
    size_t switched = 0;
    while (switched < batches.size() && batches[switched].config_version == 1) ++switched;
    ASSERT_LT(switched, batches.size()) << "group " << group << " never took version 2";
    EXPECT_GT(switched, 0u);
    EXPECT_EQ(switched % kUnroll, 0u) << "group " << group << " switched at observation " << switched;
    for (size_t k = 0; k < batches.size(); ++k) {
      EXPECT_EQ(batches[k].config_version, k < switched ? 1u : 2u) << "group " << group << " observation " << k;
      // The boundary's own rewards close the previous unroll: the old config
      // shaped them. The connection's first observations are shaped too.
      const float mark = k <= switched ? 1000.f : 2000.f;
      for (size_t i = 0; i < batches[k].rewards.size(); ++i) {
        const float raw = batches[k].rewards[i] - mark;
        EXPECT_TRUE(raw == 0.f || raw == 1.f) << "group " << group << " observation " << k << " env " << i
                                              << " reward " << batches[k].rewards[i];
      }
      // The env's own rewards go along whenever the hook changed one, the
      // connection's reset batch included (the learner ignores a reset's reward).
      ASSERT_EQ(batches[k].env_rewards.size(), batches[k].rewards.size()) << "group " << group << " observation " << k;
      for (size_t i = 0; i < batches[k].rewards.size(); ++i) {
        EXPECT_EQ(batches[k].env_rewards[i], batches[k].rewards[i] - mark) << "group " << group << " observation " << k;
      }
    }
  }
}

TEST_F(ActorLoop, TheHookSeesEveryBatchFromTheConnectionsResetsOnWithTheLearnersEnvNumbers) {
  auto hook = std::make_shared<RecordingHook>();
  start_actor(hook);
  ASSERT_TRUE(learner_.wait([](const Groups& g, const Notices&) { return each_group_sent(g, 4); }));
  stop_ = true;
  actor_.join();
  const std::vector<RecordingHook::Call> calls = hook->calls();
  const Groups groups = learner_.groups();
  for (uint32_t group = 0; group < kGroups; ++group) {
    std::vector<RecordingHook::Call> seen;
    for (const auto& c : calls) {
      if (c.group == group) seen.push_back(c);
    }
    const std::vector<Received>& sent = groups.at(group);
    ASSERT_GE(seen.size(), sent.size()) << "group " << group << ": a batch went out without the hook";
    for (size_t k = 0; k < sent.size(); ++k) {
      EXPECT_EQ(seen[k].flags, sent[k].flags) << "group " << group << " batch " << k;
      // Actor 3's envs are the learner's 3 * kEnvs .. 3 * kEnvs + kEnvs - 1; groups of kEnvs / kGroups.
      EXPECT_EQ(seen[k].first_env, kActorId * kEnvs + group * (kEnvs / kGroups));
      EXPECT_EQ(seen[k].count, kEnvs / kGroups);
    }
    for (uint8_t f : seen.at(0).flags) EXPECT_EQ(f, envs::kFirst) << "the connection's resets come first";
  }
}

TEST_F(ActorLoop, WithoutAHookTheVersionStillChangesAtABoundaryAndRewardsAreTheEnvs) {
  start_actor(nullptr);
  ASSERT_TRUE(learner_.wait([](const Groups& g, const Notices&) { return each_group_sent(g, 3); }));
  learner_.send_config(2, "2");
  ASSERT_TRUE(learner_.wait([](const Groups& g, const Notices&) { return each_group_stamped(g, 2, 2 * kUnroll); }));
  stop_ = true;
  actor_.join();
  for (const auto& [group, batches] : learner_.groups()) {
    size_t switched = 0;
    while (switched < batches.size() && batches[switched].config_version == 1) ++switched;
    ASSERT_LT(switched, batches.size());
    EXPECT_EQ(switched % kUnroll, 0u);
    for (const Received& b : batches) {
      for (float r : b.rewards) EXPECT_TRUE(r == 0.f || r == 1.f) << r;
      EXPECT_TRUE(b.env_rewards.empty()) << "nothing shaped: the rewards are the env's own";
    }
  }
}

TEST_F(ActorLoop, AHooksProblemReachesTheLearnerAsAnActorNoticeAndSteppingGoesOn) {
  start_actor(std::make_shared<MarkingHook>());
  ASSERT_TRUE(learner_.wait([](const Groups& g, const Notices&) { return each_group_sent(g, 2); }));
  learner_.send_config(2, "fail");
  ASSERT_TRUE(learner_.wait([](const Groups&, const Notices& n) { return !n.empty(); }));
  const size_t sent = learner_.groups().at(0).size();
  EXPECT_TRUE(learner_.wait([&](const Groups& g, const Notices&) { return g.at(0).size() > sent + 3; }));
  const rpc::ActorNotice notice = learner_.notices().front();
  EXPECT_EQ(notice.text, "shaping failed at exp.lua:3: boom");
  EXPECT_EQ(notice.config_version, 2u);
}

}  // namespace
}  // namespace moonseed::actor

namespace moonseed::actor {
namespace {

// Env 1 of the actor fails its 3rd step (a fault a plugin or a Python env reports).
class FailsOnce final : public envs::Env {
 public:
  const envs::EnvSpec& spec() const override { return inner_->spec(); }
  void reset(std::optional<uint64_t> seed, void* obs) override { inner_->reset(seed, obs); }
  envs::StepResult step(const void* action, void* obs) override {
    if (++steps_ == 3) throw std::runtime_error("the physics exploded");
    return inner_->step(action, obs);
  }
  std::vector<double> get_state() const override { return inner_->get_state(); }
  void set_state(const std::vector<double>& state) override { inner_->set_state(state); }

 private:
  int steps_ = 0;
  std::unique_ptr<envs::Env> inner_ = envs::make_env("CartPole-v1", {});
};

TEST_F(ActorLoop, AFailedEnvStepEndsThatEpisodeAsTruncatedTellsTheLearnerAndTheEnvStartsAgain) {
  options_.make_envs = [](const rpc::Welcome& welcome) {
    std::vector<std::unique_ptr<envs::Env>> envs;
    for (uint32_t i = 0; i < welcome.num_envs; ++i) {
      if (i == 1) {
        envs.push_back(std::make_unique<FailsOnce>());
      } else {
        envs.push_back(envs::make_env(welcome.env_id, welcome.env_options));
      }
    }
    return std::make_unique<envs::EnvArray>(std::move(envs));
  };
  start_actor(nullptr);
  ASSERT_TRUE(learner_.wait([](const Groups& g, const Notices& n) { return !n.empty() && each_group_sent(g, 6); }));
  const rpc::ActorNotice notice = learner_.notices().front();
  EXPECT_EQ(notice.text, "env 1: step failed: the physics exploded (its episode ends as truncated; the env resets)");
  // Env 1 is the second env of group 0 (envs 0-1): batch 0 resets, batches 1-2 step, batch 3
  // carries the failed step, batch 4 the reset observation, batch 5 a step again.
  const std::vector<Received> batches = learner_.groups().at(0);
  ASSERT_GE(batches.size(), 6u);
  EXPECT_EQ(batches[3].flags[1], envs::kTruncated);
  EXPECT_EQ(batches[3].rewards[1], 0.f);
  EXPECT_EQ(batches[3].flags[0], 0) << "env 0 steps on";
  EXPECT_EQ(batches[4].flags[1], envs::kFirst);
  EXPECT_EQ(batches[5].flags[1], 0);
  EXPECT_EQ(batches[5].rewards[1], 1.f);
}

TEST_F(ActorLoop, WrapsItsEnvsAsTheWelcomeSays) {
  learner_.wrappers = "time_limit max_steps=3;frame_stack n=2";
  learner_.wrapped_spec =
      envs::wrapped_spec(envs::make_env("CartPole-v1", {})->spec(), envs::parse_wrapper_list(learner_.wrappers));
  ASSERT_EQ(learner_.wrapped_spec.observation.shape, (std::vector<int64_t>{8}));
  start_actor(nullptr);
  // The actor accepted the wrapped spec (a mismatch would have ended it) and its envs end
  // their episodes at the wrapper's limit: reset, two steps, the truncated third, reset.
  ASSERT_TRUE(learner_.wait([](const Groups& g, const Notices&) { return each_group_sent(g, 6); }));
  const std::vector<Received> batches = learner_.groups().at(0);
  for (uint32_t i = 0; i < kEnvs / kGroups; ++i) {
    EXPECT_EQ(batches[0].flags[i], envs::kFirst);
    EXPECT_EQ(batches[1].flags[i], 0);
    EXPECT_EQ(batches[2].flags[i], 0);
    EXPECT_EQ(batches[3].flags[i], envs::kTruncated);
    EXPECT_EQ(batches[4].flags[i], envs::kFirst);
  }
}

TEST_F(ActorLoop, RefusesWrapperTextItCannotApply) {
  learner_.wrappers = "frame_stack n=999";
  options_.address = address_;
  options_.verbose = false;
  options_.reconnect_for_s = 1;
  try {
    run_actor(options_, stop_);
    FAIL() << "the actor must stop";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(),
                 "cannot apply the learner's env wrappers: env wrappers text: wrapper 1: n must be an integer in "
                 "[1, 64], got 999");
  }
}

TEST_F(ActorLoop, SendsTheEnvsOwnRewardsBesideClippedOnes) {
  learner_.wrappers = "clip_reward low=0 high=0.25";
  learner_.wrapped_spec = envs::make_env("CartPole-v1", {})->spec();
  start_actor(nullptr);
  ASSERT_TRUE(learner_.wait([](const Groups& g, const Notices&) { return each_group_sent(g, 3); }));
  const std::vector<Received> batches = learner_.groups().at(0);
  EXPECT_TRUE(batches[0].env_rewards.empty()) << "resets: nothing clipped";
  EXPECT_EQ(batches[1].rewards, (std::vector<float>{0.25f, 0.25f}));
  EXPECT_EQ(batches[1].env_rewards, (std::vector<float>{1.f, 1.f}));
}

}  // namespace
}  // namespace moonseed::actor
