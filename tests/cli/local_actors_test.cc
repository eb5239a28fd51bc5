// Local actor supervision (cli/local_actors.cc) with real processes: small
// shell scripts stand in for moonseed-actor, and the test says which of them
// did work (sent a step batch) through the step_batches hook.
#include "cli/local_actors.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace moonseed::cli {
namespace {

// Polls `done` every 10 ms for at most 30 s.
template <typename Done>
bool eventually(Done done) {
  for (int i = 0; i < 3000; ++i) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return done();
}

class LocalActorsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("moonseed-local-actors-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // An executable shell script standing in for moonseed-actor.
  std::string script(const std::string& body) {
    const std::string path = (dir_ / "fake-actor").string();
    std::ofstream(path) << "#!/bin/sh\n" << body << "\n";
    ::chmod(path.c_str(), 0755);
    return path;
  }
  LocalActorsOptions options(const std::string& binary, int count) {
    LocalActorsOptions o;
    o.binary = binary;
    o.address = "unix:/nowhere";
    o.count = count;
    o.log_dir = dir_.string();
    o.first_backoff_s = 0.01;
    o.max_backoff_s = 0.05;
    o.step_batches = [this](int id) { return batches_[static_cast<size_t>(id)].load(); };
    return o;
  }

  std::filesystem::path dir_;
  std::atomic<uint64_t> batches_[4] = {};
};

TEST(RestartPolicy, AnActorThatWorkedIsBackAtOnceHoweverOftenItDies) {
  RestartPolicy policy(2, 1, 30, 5);
  for (int i = 0; i < 20; ++i) {
    const RestartPolicy::Decision d = policy.on_exit(0, /*worked=*/true);
    EXPECT_FALSE(d.park);
    EXPECT_EQ(d.delay_s, 0);
  }
}

TEST(RestartPolicy, EarlyDeathsBackOffPerSlotThenParkAndWorkResetsTheCount) {
  RestartPolicy policy(2, 1, 4, 5);
  EXPECT_EQ(policy.on_exit(0, false).delay_s, 1);
  EXPECT_EQ(policy.on_exit(0, false).delay_s, 2);
  EXPECT_EQ(policy.on_exit(1, false).delay_s, 1) << "each slot has its own schedule";
  EXPECT_EQ(policy.on_exit(0, false).delay_s, 4);
  EXPECT_EQ(policy.on_exit(0, true).delay_s, 0) << "it worked: the count starts over";
  for (int i = 1; i <= 4; ++i) {
    const RestartPolicy::Decision d = policy.on_exit(0, false);
    EXPECT_FALSE(d.park);
    EXPECT_EQ(d.early_deaths, i);
    EXPECT_LE(d.delay_s, 4) << "capped";
  }
  const RestartPolicy::Decision fifth = policy.on_exit(0, false);
  EXPECT_TRUE(fifth.park);
  EXPECT_EQ(fifth.early_deaths, 5);
  EXPECT_FALSE(policy.on_exit(1, false).park);
}

TEST_F(LocalActorsTest, KilledActorsThatWorkedAreEachRestartedAtOnce) {
  LocalActors actors(options(script("exec sleep 1000"), 3));
  actors.start();
  ASSERT_TRUE(eventually([&] { return actors.pid_of(0) > 0 && actors.pid_of(1) > 0 && actors.pid_of(2) > 0; }));
  const pid_t first = actors.pid_of(0), second = actors.pid_of(1);
  batches_[0] = 10;  // both did work
  batches_[1] = 10;
  ASSERT_EQ(::kill(first, SIGKILL), 0);
  ASSERT_EQ(::kill(second, SIGKILL), 0);
  EXPECT_TRUE(eventually([&] { return actors.restarts() == 2; }));
  EXPECT_TRUE(eventually([&] {
    return actors.pid_of(0) > 0 && actors.pid_of(0) != first && actors.pid_of(1) > 0 && actors.pid_of(1) != second;
  }));
  // A hung one is killed through the supervisor and comes back the same way.
  batches_[2] = 1;
  const pid_t third = actors.pid_of(2);
  EXPECT_TRUE(actors.kill(2));
  EXPECT_TRUE(eventually([&] { return actors.pid_of(2) > 0 && actors.pid_of(2) != third; }));
  EXPECT_EQ(actors.restarts(), 3);
  EXPECT_FALSE(actors.all_parked());
  actors.shutdown(0);
  EXPECT_EQ(actors.pid_of(0), -1);
}

TEST_F(LocalActorsTest, ArgumentsComeBeforeTheAddressAndTheEnvironmentIsTheLearnersWithOverrides) {
  // What a Python actor needs: "-m moonseed.actor --env M:F" before --connect, and PYTHONPATH.
  ::setenv("MOONSEED_LOCAL_ACTORS_KEPT", "kept", 1);
  ::setenv("MOONSEED_LOCAL_ACTORS_REPLACED", "old", 1);
  LocalActorsOptions o = options(script("echo \"args: $*\"\necho \"env: $MOONSEED_LOCAL_ACTORS_KEPT "
                                        "$MOONSEED_LOCAL_ACTORS_REPLACED\"\nexec sleep 1000"),
                                 1);
  o.arguments = {"-m", "moonseed.actor", "--env", "a b:c"};
  o.environment = {"MOONSEED_LOCAL_ACTORS_REPLACED=new"};
  LocalActors actors(o);
  actors.start();
  const std::string log = (dir_ / "actor-0.log").string();
  auto read = [&] {
    std::ifstream in(log);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  };
  ASSERT_TRUE(eventually([&] { return read().find("env: ") != std::string::npos; })) << read();
  EXPECT_NE(read().find("args: -m moonseed.actor --env a b:c --connect unix:/nowhere --actor-id 0\n"), std::string::npos)
      << read();
  EXPECT_NE(read().find("env: kept new\n"), std::string::npos) << read();
  actors.shutdown(0);
}

// When memory runs out, the kernel picks the process with the highest score: an actor's is
// above its learner's, so a leaking env takes its actor down, not the learner.
TEST_F(LocalActorsTest, ActorsAreTheKernelsFirstChoiceWhenMemoryRunsOut) {
  LocalActors actors(options(script("cat /proc/self/oom_score_adj\nexec sleep 1000"), 1));
  actors.start();
  const std::string log = (dir_ / "actor-0.log").string();
  auto read = [&] {
    std::ifstream in(log);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  };
  ASSERT_TRUE(eventually([&] { return read().find('\n') != std::string::npos; })) << read();
  const int learner = own_oom_score_adj();
  EXPECT_EQ(std::stoi(read()), std::min(1000, learner + kActorOomScoreAdjAbove)) << read();
  if (learner < 1000) EXPECT_GT(std::stoi(read()), learner);
  actors.shutdown(0);
  EXPECT_EQ(actor_oom_score_adj(900), 1000);
  EXPECT_EQ(actor_oom_score_adj(-1000), -500);
}

TEST_F(LocalActorsTest, AnActorThatDiesBeforeWorkingIsParkedQuotingItsLog) {
  LocalActors actors(options(script("echo \"starting actor $4\"\necho 'env Foo-v0: no such env' >&2\nexit 3"), 2));
  actors.start();
  ASSERT_TRUE(eventually([&] { return actors.all_parked(); }));
  std::vector<LocalActors::Parked> parked = actors.take_parked();
  ASSERT_EQ(parked.size(), 2u);
  for (const LocalActors::Parked& p : parked) {
    EXPECT_NE(p.message.find("exited with code 3 before its first step batch, 5 times in a row"), std::string::npos)
        << p.message;
    EXPECT_NE(p.message.find("env Foo-v0: no such env"), std::string::npos) << p.message;
    EXPECT_NE(p.message.find("starting actor " + std::to_string(p.id)), std::string::npos) << p.message;
  }
  EXPECT_TRUE(actors.take_parked().empty()) << "taken once";
  EXPECT_EQ(actors.restarts(), 8) << "4 restarts per slot before the fifth death parks it";
  EXPECT_EQ(actors.pid_of(0), -1);
}

TEST_F(LocalActorsTest, OnlyTheSlotThatKeepsFailingIsParked) {
  // Actor 0 fails at start; actor 1 runs (and works).
  LocalActors actors(options(script("[ \"$4\" = 0 ] && exit 1\nexec sleep 1000"), 2));
  actors.start();
  ASSERT_TRUE(eventually([&] { return !actors.take_parked().empty(); }));
  EXPECT_FALSE(actors.all_parked());
  EXPECT_GT(actors.pid_of(1), 0);
}

TEST(TailLines, TheLastLinesOfAFile) {
  const std::string path = (std::filesystem::temp_directory_path() / "moonseed-tail-test.log").string();
  std::ofstream(path) << "one\ntwo\nthree\nfour\n";
  EXPECT_EQ(tail_lines(path, 2), "three\nfour");
  EXPECT_EQ(tail_lines(path, 10), "one\ntwo\nthree\nfour");
  std::ofstream(path) << "no newline at the end";
  EXPECT_EQ(tail_lines(path, 3), "no newline at the end");
  std::filesystem::remove(path);
  EXPECT_EQ(tail_lines(path, 3), "");
}

}  // namespace
}  // namespace moonseed::cli
