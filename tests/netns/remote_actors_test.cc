// Actors on another host, for real: a learner (`moonseed run`, listening on
// TCP) in one network namespace, `moonseed actor` processes in another,
// joined through a bridge (tests/netns/hosts.h), some behind the delaying
// relay (tests/netns/delay_relay.cc) in the actors' host. What is checked is
// what a user of two machines would see: training with the right token, a
// wrong token refused, a cable pulled and plugged back, a thin link.
// Runs stop on `moonseed ctl RUN stop`, never on time (tests/e2e/process.h);
// every wait is bounded far above what it takes on an idle machine.
// Without root (or where `ip netns add` is refused) every test skips, saying why.
#include <sys/stat.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/e2e/actor_list.h"
#include "tests/e2e/process.h"
#include "tests/netns/delay_relay.h"
#include "tests/netns/hosts.h"

namespace moonseed::testing {
namespace {

const std::string kBinary = MOONSEED_BINARY;
const std::string kExample = std::string(MOONSEED_SOURCE_DIR) + "/examples/cartpole_vtrace.lua";
constexpr int kLearnerPort = 7000;

class ActorsOnOtherHosts : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string why = HostNetwork::unavailable_reason();
    if (!why.empty()) GTEST_SKIP() << why;
    // One prefix per test, the same in every run: a crashed run's namespaces are deleted by the next.
    const std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    hosts_.emplace("moonseed-" + name, std::vector<std::string>{"learner", "actors"}, run_.runs_dir);
    token_ = token_file("token", "across-hosts");
  }

  // A mode-0600 token file in the runs directory.
  std::string token_file(const std::string& name, const std::string& token) const {
    const std::string path = run_.runs_dir + "/" + name;
    std::ofstream(path) << token << "\n";
    ::chmod(path.c_str(), 0600);
    return path;
  }

  std::string learner_address() const { return hosts_->address("learner") + ":" + std::to_string(kLearnerPort); }

  // The learner in its host, for `actors` remote actors and no local one; returns once it listens.
  void start_learner(int actors, const std::vector<std::string>& extra = {}) {
    std::vector<std::string> overrides = {kUntilStopped,
                                          "topology.transport=\"tcp\"",
                                          "topology.listen=\"tcp:" + learner_address() + "\"",
                                          "topology.local_actors=0",
                                          "topology.actors=" + std::to_string(actors),
                                          "topology.envs_per_actor=16",
                                          "log.interval_s=0.2",
                                          "stop.return_mean=0",
                                          "--auth-token-file",
                                          token_};
    overrides.insert(overrides.end(), extra.begin(), extra.end());
    learner_.emplace(hosts_->command_in("learner", run_.args(overrides)), run_.log);
    // learner.address appears once the learner listens (actors that came sooner would spin on refusals).
    ASSERT_TRUE(eventually(120, [&] { return !run_.run_dir().empty() && !read_file(run_.run_dir() + "/learner.address").empty(); }))
        << read_file(run_.log);
  }

  // A relay in the actors' host adding `delay_ms` each way to the learner; its address for --connect.
  std::string relay_to_learner(double delay_ms) {
    const std::string log = run_.runs_dir + "/relay-" + std::to_string(relays_.size()) + ".log";
    relays_.push_back(std::make_unique<ChildProcess>(
        hosts_->command_in("actors", delay_relay_args("127.0.0.1:0", learner_address(), delay_ms)), log));
    const int port = relay_port(log, 60);
    EXPECT_GT(port, 0) << read_file(log);
    return "tcp:127.0.0.1:" + std::to_string(port);
  }

  // `moonseed actor` for slot `id` in the actors' host; the n-th started logs to actor_log(n).
  ChildProcess& start_actor(int id, const std::string& address, const std::string& token_path) {
    const std::string log = actor_log(static_cast<int>(actors_.size()));
    actors_.push_back(std::make_unique<ChildProcess>(
        // A learner gone for good is given up on after 10 s (not the default 60): an actor that missed
        // the run's Bye would reconnect through its relay until then and exit 3, which the tests refuse.
        hosts_->command_in("actors", {kBinary, "actor", "--connect", address, "--actor-id", std::to_string(id),
                                      "--auth-token-file", token_path, "--reconnect-for", "10"}),
        log));
    return *actors_.back();
  }
  std::string actor_log(int n) const { return run_.runs_dir + "/actor-" + std::to_string(n) + ".log"; }

  std::vector<ListedActor> listed() {
    return listed_actors(
        run_to_end({kBinary, "ctl", run_.run_dir(), "status"}, run_.runs_dir + "/ctl-" + std::to_string(++ctl_calls_) + ".log", 60)
            .output);
  }

  // Frames and episodes both grow past what they are now.
  bool training_goes_on() {
    const double frames = last(run_.metrics(), "frames"), episodes = last(run_.metrics(), "episodes");
    return eventually(120, [&] {
      return last(run_.metrics(), "frames") > frames && last(run_.metrics(), "episodes") > episodes;
    });
  }

  // `moonseed ctl RUN stop`, then the learner's and every actor's exit. Each actor still running
  // reads the run's Bye, through its relay or not, and exits 0 ("the run is over"): one that took the
  // end for a lost learner would exit 3 once --reconnect-for gave up.
  void stop_run() {
    std::vector<bool> running;
    for (const auto& actor : actors_) running.push_back(actor->running());
    const Finished ctl = run_to_end({kBinary, "ctl", run_.run_dir(), "stop"}, run_.runs_dir + "/ctl-stop.log", 60);
    EXPECT_EQ(ctl.exit_code, std::optional<int>(0)) << ctl.output;
    EXPECT_EQ(learner_->wait(120), std::optional<int>(0)) << read_file(run_.log);
    for (size_t i = 0; i < actors_.size(); ++i) {
      const std::optional<int> code = actors_[i]->wait(60);
      EXPECT_TRUE(code.has_value()) << "actor " << i << " outlived the run";
      if (running[i]) {
        EXPECT_EQ(code, std::optional<int>(0)) << read_file(actor_log(static_cast<int>(i)));
        EXPECT_NE(read_file(actor_log(static_cast<int>(i))).find("learner said bye"), std::string::npos)
            << read_file(actor_log(static_cast<int>(i)));
      }
    }
  }

  int joins(int actor) const {
    int n = 0;
    for (const MetricsRow& r : read_events(run_.run_dir() + "/metrics.jsonl", "actor_joined")) n += r.at("actor") == actor;
    return n;
  }

  TrainingRun run_{kExample, {}, "moonseed-netns"};
  // Declared before the processes: destroyed after them, since a namespace
  // outlives its deletion while a process is still inside.
  std::optional<HostNetwork> hosts_;
  std::optional<ChildProcess> learner_;
  std::vector<std::unique_ptr<ChildProcess>> relays_;
  std::vector<std::unique_ptr<ChildProcess>> actors_;
  std::string token_;
  int ctl_calls_ = 0;
};

TEST_F(ActorsOnOtherHosts, ActorsZeroOneFiveAndTenMillisecondsAwayAllTrainWithTheRightToken) {
  const std::vector<double> delays_ms = {0, 1, 5, 10};
  start_learner(static_cast<int>(delays_ms.size()));
  for (size_t id = 0; id < delays_ms.size(); ++id) {
    const std::string address = delays_ms[id] == 0 ? "tcp:" + learner_address() : relay_to_learner(delays_ms[id]);
    start_actor(static_cast<int>(id), address, token_);
  }
  std::vector<ListedActor> list;
  ASSERT_TRUE(eventually(120, [&] {
    list = listed();
    if (list.size() != delays_ms.size()) return false;
    for (const ListedActor& a : list) {
      if (!a.connected || a.frames <= 0) return false;
    }
    return true;
  })) << read_file(run_.log);
  const std::vector<ListedActor> before = list;
  // Every actor's own frames grow, whatever its distance.
  ASSERT_TRUE(eventually(120, [&] {
    list = listed();
    for (size_t i = 0; i < delays_ms.size(); ++i) {
      if (list.size() != delays_ms.size() || list[i].frames <= before[i].frames) return false;
    }
    return true;
  })) << read_file(run_.log);
  for (size_t i = 0; i < delays_ms.size(); ++i) {
    std::printf("actor %zu, %.0f ms each way: %.0f frames, %.0f more since all had started\n", i, delays_ms[i],
                list[i].frames, list[i].frames - before[i].frames);
  }
  EXPECT_TRUE(training_goes_on()) << read_file(run_.log);
  EXPECT_EQ(last(run_.metrics(), "auth_failures"), 0);
  // Every actor, 0 to 10 ms away, exits 0 on the run's Bye: one whose send fails first (its relay
  // closes both ways once the learner has, resetting the connection) still finds the Bye.
  stop_run();
}

TEST_F(ActorsOnOtherHosts, AnActorWithAWrongTokenIsRefusedAndExitsSayingWhy) {
  start_learner(1);
  const std::string relay = relay_to_learner(5);
  ChildProcess& intruder = start_actor(0, relay, token_file("guess", "a-guess"));
  EXPECT_EQ(intruder.wait(120), std::optional<int>(4)) << read_file(actor_log(0));
  EXPECT_NE(read_file(actor_log(0)).find("refused by the learner"), std::string::npos) << read_file(actor_log(0));
  EXPECT_NE(read_file(actor_log(0)).find("wrong auth token"), std::string::npos) << read_file(actor_log(0));
  EXPECT_TRUE(eventually(60, [&] { return read_file(run_.log).find("wrong auth token") != std::string::npos; }))
      << read_file(run_.log);
  // The learner goes on, and admits the actor that has the token to the same slot.
  start_actor(0, relay, token_);
  ASSERT_TRUE(eventually(120, [&] { return last(run_.metrics(), "actors") == 1; })) << read_file(actor_log(1));
  EXPECT_TRUE(training_goes_on()) << read_file(run_.log);
  stop_run();
}

TEST_F(ActorsOnOtherHosts, ActorsWhoseHostIsCutOffForSecondsRejoinAndTrainAgain) {
  // A short timeout: the learner frees the slots of actors it cannot hear during the cut.
  start_learner(2, {"topology.actor_timeout_s=2"});
  ChildProcess& direct = start_actor(0, "tcp:" + learner_address(), token_);
  ChildProcess& relayed = start_actor(1, relay_to_learner(5), token_);
  ASSERT_TRUE(eventually(120, [&] { return last(run_.metrics(), "actors") == 2; })) << read_file(run_.log);
  ASSERT_TRUE(training_goes_on()) << read_file(run_.log);

  hosts_->cut("actors");
  const bool freed = eventually(120, [&] {
    return read_events(run_.run_dir() + "/metrics.jsonl", "actor_hung").size() >= 2 && last(run_.metrics(), "actors") == 0;
  });
  std::this_thread::sleep_for(std::chrono::seconds(2));  // the cable stays out a little longer
  hosts_->restore("actors");
  ASSERT_TRUE(freed) << "the learner noticed neither actor was gone\n" << read_file(run_.log);
  EXPECT_TRUE(learner_->running());

  ASSERT_TRUE(eventually(120, [&] { return joins(0) >= 2 && joins(1) >= 2 && last(run_.metrics(), "actors") == 2; }))
      << read_file(run_.log) << read_file(actor_log(0)) << read_file(actor_log(1));
  EXPECT_TRUE(training_goes_on()) << read_file(run_.log);
  EXPECT_TRUE(direct.running());
  EXPECT_TRUE(relayed.running());
  for (int id : {0, 1}) {
    // Whether a Bye, a reset or the relay's close told it, the same process connected twice.
    const std::string log = read_file(actor_log(id));
    const size_t first = log.find("connected to ");
    EXPECT_NE(log.find("connected to ", first + 1), std::string::npos) << log;
  }
  stop_run();
}

TEST_F(ActorsOnOtherHosts, TrainingGoesOnThroughALinkCappedByATokenBucket) {
  hosts_->cap_bandwidth("actors", "1mbit");
  EXPECT_NE(hosts_->qdiscs("actors").find("tbf"), std::string::npos) << hosts_->qdiscs("actors");
  start_learner(2);
  start_actor(0, "tcp:" + learner_address(), token_);
  start_actor(1, relay_to_learner(10), token_);
  ASSERT_TRUE(eventually(120, [&] { return last(run_.metrics(), "actors") == 2; })) << read_file(run_.log);
  EXPECT_TRUE(training_goes_on()) << read_file(run_.log);
  std::printf("through 1 Mbit/s: %.0f frames/s\n", last(run_.metrics(), "fps"));
  stop_run();
}

}  // namespace
}  // namespace moonseed::testing
