// Local actor supervision (cli/engine/local_actors.cc) with real processes: small
// shell scripts stand in for moonseed-actor, and the test says which of them
// made progress (sent env steps) through the env_steps hook. The restart
// policy is a pure function, driven here with made-up times.
#include "cli/engine/local_actors.h"

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/memory_cgroup.h"

#include "base/log.h"

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
  // Starts one slot that dies once and is parked (deaths_to_park = 1); returns the park message.
  std::string park_message(LocalActorsOptions o, LocalActors** kept = nullptr) {
    o.rules.deaths_to_park = 1;
    actors_ = std::make_unique<LocalActors>(o);
    if (kept != nullptr) *kept = actors_.get();
    actors_->start();
    if (!eventually([&] { return actors_->all_parked(); })) return "(never parked)";
    const std::vector<LocalActors::Parked> parked = actors_->take_parked();
    return parked.size() == 1 ? parked[0].message : "(" + std::to_string(parked.size()) + " parked)";
  }
  std::unique_ptr<LocalActors> actors_;

  LocalActorsOptions options(const std::string& binary, int count) {
    LocalActorsOptions o;
    o.binary = binary;
    o.address = "unix:/nowhere";
    o.count = count;
    o.log_dir = dir_.string();
    o.rules.first_backoff_s = 0.01;
    o.rules.max_backoff_s = 0.05;
    o.env_steps = [this](int id) { return steps_[static_cast<size_t>(id)].load(); };
    return o;
  }

  std::filesystem::path dir_;
  std::atomic<uint64_t> steps_[4] = {};
};

// The delays of slot `id` dying `n` times, `every_s` apart from `t0`, having worked each time.
std::vector<double> delays(RestartPolicy& policy, int id, int n, double every_s, double t0 = 0) {
  std::vector<double> out;
  for (int i = 0; i < n; ++i) {
    const RestartPolicy::Decision d = policy.on_exit(id, /*worked=*/true, t0 + i * every_s);
    out.push_back(d.park ? -1 : d.delay_s);
  }
  return out;
}

TEST(RestartPolicy, ASlotThatKeepsDyingAfterWorkingRestartsAtOnceThenBacksOffThenIsParked) {
  // A plugin that segfaults after 300 steps, every life: about twice a second.
  RestartPolicy policy(2, RestartRules{});
  EXPECT_EQ(policy.free_restarts(), 5);
  EXPECT_EQ(delays(policy, 0, 10, 0.5), (std::vector<double>{0, 0, 0, 0, 0, 1, 2, 4, 8, -1}))
      << "half of the 10 deaths allowed in the window at once, then 1 s doubling, the tenth parks";
  EXPECT_EQ(delays(policy, 1, 1, 0.5), std::vector<double>{0}) << "each slot has its own schedule";
}

TEST(RestartPolicy, AnOccasionalKillCostsNothing) {
  // One of four actors kill -9ed every 1.5 s: each slot dies every 6 s, four times.
  RestartPolicy policy(4, RestartRules{});
  for (int id = 0; id < 4; ++id) EXPECT_EQ(delays(policy, id, 4, 6, 1.5 * id), (std::vector<double>(4, 0)));
  // A death every two minutes, for hours: never more than 5 in a 600 s window.
  RestartPolicy hours(1, RestartRules{});
  EXPECT_EQ(delays(hours, 0, 200, 121), (std::vector<double>(200, 0)));
}

TEST(RestartPolicy, DeathsOlderThanTheWindowNoLongerCount) {
  RestartRules rules;
  rules.deaths_to_park = 4;
  rules.window_s = 100;
  RestartPolicy policy(1, rules);
  EXPECT_EQ(policy.free_restarts(), 2);
  EXPECT_EQ(delays(policy, 0, 3, 1), (std::vector<double>{0, 0, 1}));
  const RestartPolicy::Decision later = policy.on_exit(0, true, 150);
  EXPECT_EQ(later.deaths_in_window, 1) << "the three at 0..2 s are out of the window";
  EXPECT_EQ(later.delay_s, 0);
  EXPECT_FALSE(later.park);
}

TEST(RestartPolicy, AHungActorEveryTimeoutIsParkedToo) {
  // Killed as hung every 35 s (actor_timeout_s 30): 10 deaths fit in the 600 s window.
  RestartPolicy policy(1, RestartRules{});
  const std::vector<double> d = delays(policy, 0, 10, 35);
  EXPECT_EQ(d.back(), -1) << "parked at the tenth";
  EXPECT_EQ(d[8], 8);
}

TEST(RestartPolicy, EarlyDeathsBackOffFromTheFirstAndParkAfterFiveInARow) {
  RestartRules rules;
  rules.max_backoff_s = 4;
  RestartPolicy policy(2, rules);
  double t = 0;
  EXPECT_EQ(policy.on_exit(0, false, t += 1).delay_s, 1);
  EXPECT_EQ(policy.on_exit(0, false, t += 1).delay_s, 2);
  EXPECT_EQ(policy.on_exit(1, false, t).delay_s, 1) << "each slot has its own schedule";
  EXPECT_EQ(policy.on_exit(0, false, t += 1).delay_s, 4);
  // An exit 0 on the first step after the reset batch is early too: the caller says so (no env steps).
  const RestartPolicy::Decision worked = policy.on_exit(0, true, t += 1);
  EXPECT_EQ(worked.early_deaths, 0) << "it made progress: the run of early deaths is over";
  EXPECT_FALSE(worked.park);
  for (int i = 1; i <= 4; ++i) {
    const RestartPolicy::Decision d = policy.on_exit(0, false, t += 1000);
    EXPECT_FALSE(d.park);
    EXPECT_EQ(d.early_deaths, i);
    EXPECT_LE(d.delay_s, 4) << "capped";
  }
  const RestartPolicy::Decision fifth = policy.on_exit(0, false, t += 1000);
  EXPECT_TRUE(fifth.park) << "five in a row, however far apart";
  EXPECT_EQ(fifth.early_deaths, 5);
  EXPECT_FALSE(policy.on_exit(1, false, t).park);
}

TEST(RestartPolicy, ZeroDeathsToParkNeverParksButStillBacksOff) {
  RestartRules rules;
  rules.deaths_to_park = 0;
  rules.early_deaths_to_park = 0;
  RestartPolicy policy(1, rules);
  const std::vector<double> d = delays(policy, 0, 100, 0.1);
  EXPECT_EQ(std::count(d.begin(), d.end(), -1), 0);
  EXPECT_EQ(d[4], 0);
  EXPECT_EQ(d[5], 1);
  EXPECT_EQ(d.back(), 30) << "at most max_backoff_s";
}

// The status of a real child that ran `body`.
int status_of(void (*body)()) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    body();
    ::_exit(99);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return status;
}

TEST(Death, EachEndIsNamedWithItsCause) {
  EXPECT_EQ(describe(death_of_status(status_of([] { ::_exit(0); }))), "exited on its own with code 0");
  EXPECT_EQ(describe(death_of_status(status_of([] { ::_exit(3); }))), "exited with code 3");
  const Death segv = death_of_status(status_of([] { ::raise(SIGSEGV); }));
  EXPECT_EQ(segv.cause, Death::Cause::kCrashed);
  EXPECT_EQ(describe(segv), "crashed (SIGSEGV, Segmentation fault)");
  EXPECT_EQ(describe(death_of_status(status_of([] { ::raise(SIGABRT); }))), "crashed (SIGABRT, Aborted)");
  const Death killed = death_of_status(status_of([] { ::raise(SIGKILL); }));
  EXPECT_EQ(killed.cause, Death::Cause::kSignaled);
  EXPECT_EQ(describe(killed), "killed by signal (SIGKILL, Killed)");
  EXPECT_EQ(describe(Death{Death::Cause::kHung, 0, "no step batch for 5.2 s (timeout 5 s)"}),
            "hung: no step batch for 5.2 s (timeout 5 s)");
}

TEST(SlotNote, TheProgressLineSaysWhatBacksOffAndWhatIsParked) {
  EXPECT_EQ(slot_note(SlotCounts{}), "");
  SlotState running, waiting, parked;
  running.state = SlotState::State::kRunning;
  waiting.state = SlotState::State::kBackingOff;
  waiting.restart_in_s = 7.2;
  waiting.hung = 2;
  parked.state = SlotState::State::kParked;
  const SlotCounts c = count_slots({running, waiting, parked});
  EXPECT_EQ(c.running, 1);
  EXPECT_EQ(slot_note(c), " (1 backing off 8 s, 1 parked, 2 hung)");
}

TEST_F(LocalActorsTest, KilledActorsThatWorkedAreEachRestartedAtOnce) {
  LocalActors actors(options(script("exec sleep 1000"), 3));
  actors.start();
  ASSERT_TRUE(eventually([&] { return actors.pid_of(0) > 0 && actors.pid_of(1) > 0 && actors.pid_of(2) > 0; }));
  const pid_t first = actors.pid_of(0), second = actors.pid_of(1);
  steps_[0] = 10;  // both did work
  steps_[1] = 10;
  ASSERT_EQ(::kill(first, SIGKILL), 0);
  ASSERT_EQ(::kill(second, SIGKILL), 0);
  EXPECT_TRUE(eventually([&] { return actors.restarts() == 2; }));
  EXPECT_TRUE(eventually([&] {
    return actors.pid_of(0) > 0 && actors.pid_of(0) != first && actors.pid_of(1) > 0 && actors.pid_of(1) != second;
  }));
  // A hung one is killed through the supervisor and comes back the same way.
  steps_[2] = 1;
  const pid_t third = actors.pid_of(2);
  EXPECT_TRUE(actors.kill(2, Death{Death::Cause::kHung, 0, "no step batch for 5 s (timeout 5 s)"}));
  EXPECT_TRUE(eventually([&] { return actors.pid_of(2) > 0 && actors.pid_of(2) != third; }));
  EXPECT_EQ(actors.restarts(), 3);
  EXPECT_FALSE(actors.all_parked());
  const std::vector<SlotState> slots = actors.slots();
  EXPECT_EQ(slots[2].last_death, "hung: no step batch for 5 s (timeout 5 s)") << "the run's reason, not SIGKILL";
  EXPECT_EQ(slots[2].hung, 1);
  EXPECT_EQ(slots[0].last_death, "killed by signal (SIGKILL, Killed)");
  EXPECT_EQ(count_slots(slots).deaths, 3);
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
  if (learner < 1000) {
    EXPECT_GT(std::stoi(read()), learner);
  }
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
    EXPECT_NE(p.message.find("exited with code 3 before its first env step, 5 times in a row"), std::string::npos)
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

// Lines logged while it lives.
struct LogCapture {
  LogCapture() {
    previous = base::set_log_sink([this](const base::LogLine& line) {
      std::lock_guard<std::mutex> lock(mu);
      lines.emplace_back(line.text);
    });
  }
  ~LogCapture() { base::set_log_sink(std::move(previous)); }
  std::vector<std::string> taken() {
    std::lock_guard<std::mutex> lock(mu);
    return lines;
  }
  std::mutex mu;
  std::vector<std::string> lines;
  base::LogSink previous;
};

TEST_F(LocalActorsTest, ASlotThatWorksThenKeepsExitingIsParkedNamingItsEnvAndItsLogStaysShort) {
  // Every life makes progress (the hook counts up at each look), then exits 0 on its own.
  std::atomic<uint64_t> steps{0};
  LocalActorsOptions o = options(script("echo \"actor $4 ran\"\nexit 0"), 1);
  o.env = "plugin /plugins/libprobe.so (env Probe-v0)";
  o.rules.deaths_to_park = 4;
  o.env_steps = [&](int) { return steps += 10; };
  LogCapture log;
  LocalActors actors(o);
  actors.start();
  ASSERT_TRUE(eventually([&] { return actors.all_parked(); }));
  const std::vector<LocalActors::Parked> parked = actors.take_parked();
  ASSERT_EQ(parked.size(), 1u);
  EXPECT_NE(parked[0].message.find("actor 0 (plugin /plugins/libprobe.so (env Probe-v0), pid "), std::string::npos)
      << parked[0].message;
  EXPECT_NE(parked[0].message.find(") exited on its own with code 0, 4 deaths in 600 s: not restarting it; the end of"),
            std::string::npos)
      << parked[0].message;
  EXPECT_NE(parked[0].message.find("actor 0 ran"), std::string::npos) << parked[0].message;
  EXPECT_EQ(actors.restarts(), 3);
  const std::vector<SlotState> slots = actors.slots();
  EXPECT_EQ(slots[0].state, SlotState::State::kParked);
  EXPECT_EQ(slots[0].deaths, 4);
  // One line per death: three restarts (two at once, one after a backoff) and the park.
  const std::vector<std::string> lines = log.taken();
  EXPECT_EQ(lines.size(), 4u);
  ASSERT_GE(lines.size(), 3u);
  EXPECT_NE(lines[0].find("exited on its own with code 0; restarting now"), std::string::npos) << lines[0];
  EXPECT_NE(lines[2].find("(3 deaths in 600 s, parked at 4); restarting in 0.01 s"), std::string::npos) << lines[2];
}

TEST_F(LocalActorsTest, ACrashIsNamedWithItsSignal) {
  const std::string message = park_message(options(script("kill -SEGV $$"), 1));
  EXPECT_NE(message.find("crashed (SIGSEGV, Segmentation fault)"), std::string::npos) << message;
}

TEST_F(LocalActorsTest, AnActorOverItsMemoryLimitIsKilledForMemoryWithItsWholeProcessGroup) {
  // The actor starts a child that holds 160 MiB (what its env started counts too), then waits.
  LocalActorsOptions o = options(script("/usr/bin/python3 -c 'import time; b = bytearray(160 << 20); time.sleep(1000)' &\n"
                                        "exec sleep 1000"),
                                 1);
  o.memory_limit_bytes = 100 << 20;
  o.memory_check_s = 0.05;
  LocalActors* actors = nullptr;
  const std::string message = park_message(o, &actors);
  EXPECT_NE(message.find("killed for memory: its processes held "), std::string::npos) << message;
  EXPECT_NE(message.find(", over topology.actor_memory_mb = 100"), std::string::npos) << message;
  EXPECT_EQ(actors->slots()[0].last_death.rfind("killed for memory", 0), 0u) << actors->slots()[0].last_death;
}

TEST_F(LocalActorsTest, AnActorUnderItsMemoryLimitHasItsMemoryReadAndRuns) {
  LocalActorsOptions o = options(script("exec sleep 1000"), 1);
  o.memory_limit_bytes = 100 << 20;
  o.memory_check_s = 0.05;
  LocalActors actors(o);
  actors.start();
  ASSERT_TRUE(eventually([&] { return actors.slots()[0].memory_bytes >= 0; }));
  EXPECT_LT(actors.slots()[0].memory_bytes, 100 << 20);
  EXPECT_EQ(actors.slots()[0].deaths, 0);
  actors.shutdown(0);
}

TEST_F(LocalActorsTest, AnActorTheKernelKillsForLackOfMemoryIsSaidToBeKilledForMemory) {
  testing::MemoryCgroup cgroup;
  if (!cgroup.make("moonseed-local-actors-oom", 64 << 20)) GTEST_SKIP() << cgroup.error();
  // The actor moves itself into a cgroup of 64 MiB, then takes more: the kernel kills it (SIGKILL).
  const std::string message = park_message(options(
      script("echo $$ > " + cgroup.procs_file() + "\nexec /usr/bin/python3 -c 'b = bytearray(256 << 20)'"), 1));
  EXPECT_NE(message.find("killed for memory: the kernel's OOM killer ended it"), std::string::npos) << message;
}

TEST_F(LocalActorsTest, AKillFromOutsideIsNotTakenForTheKernelsOomKiller) {
  LocalActorsOptions o = options(script("exec sleep 1000"), 1);
  o.rules.deaths_to_park = 1;
  LocalActors actors(o);
  actors.start();
  ASSERT_TRUE(eventually([&] { return actors.pid_of(0) > 0; }));
  ::kill(actors.pid_of(0), SIGKILL);
  ASSERT_TRUE(eventually([&] { return actors.all_parked(); }));
  const std::vector<LocalActors::Parked> parked = actors.take_parked();
  ASSERT_EQ(parked.size(), 1u);
  EXPECT_NE(parked[0].message.find("killed by signal (SIGKILL, Killed)"), std::string::npos) << parked[0].message;
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
