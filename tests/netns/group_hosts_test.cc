// A learner group across hosts, for real: rank 0 and rank 1 (`moonseed run
// --rank R --world-size 2 --rendezvous tcp:RANK0:PORT`) each in a host of its
// own, their actors (`moonseed actor`) in two more, behind the delaying relay
// (tests/netns/delay_relay.cc), all made of network namespaces
// (tests/netns/hosts.h). What a user of four machines would see: the group
// trains through latency with one model, a wrong token is refused, an actor
// host cut off and plugged back leaves the ranks training and its actors
// rejoin, and a rank's host cut off stops the group, naming it.
// Runs stop on frames or `moonseed ctl`, never on time; every wait is bounded
// far above what it takes on an idle machine. Without root, every test skips.
#include <sys/stat.h>

#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/e2e/process.h"
#include "tests/netns/delay_relay.h"
#include "tests/netns/hosts.h"

namespace moonseed::testing {
namespace {

const std::string kBinary = MOONSEED_BINARY;
const std::string kExample = std::string(MOONSEED_SOURCE_DIR) + "/examples/cartpole_vtrace.lua";
constexpr int kRendezvousPort = 29500;
constexpr int kActorPort = 7000;

class GroupOnHosts : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string why = HostNetwork::unavailable_reason();
    if (!why.empty()) GTEST_SKIP() << why;
    const std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    hosts_.emplace("msg-" + name.substr(0, 24), std::vector<std::string>{"rank0", "rank1", "act0", "act1"},
                   run_.runs_dir);
    token_ = token_file("token", "a group across hosts");
  }

  std::string token_file(const std::string& name, const std::string& token) const {
    const std::string path = run_.runs_dir + "/" + name;
    std::ofstream(path) << token << "\n";
    ::chmod(path.c_str(), 0600);
    return path;
  }

  std::string rank_address(int rank) const {
    return hosts_->address("rank" + std::to_string(rank)) + ":" + std::to_string(kActorPort);
  }
  std::string rank_log(int rank) const { return run_.runs_dir + "/rank" + std::to_string(rank) + ".log"; }

  // Both ranks, each in its host, one remote actor slot each; rank 0 stops on `rank0_stop`.
  void start_group(const std::string& rank0_stop, const std::vector<std::string>& extra = {}) {
    for (int rank = 0; rank < 2; ++rank) {
      std::vector<std::string> overrides = {rank == 0 ? rank0_stop : kUntilStopped,
                                            "topology.transport=\"tcp\"",
                                            "topology.listen=\"tcp:" + rank_address(rank) + "\"",
                                            "topology.local_actors=0",
                                            "topology.actors=2",
                                            "topology.envs_per_actor=16",
                                            "log.interval_s=0.2",
                                            "stop.return_mean=0"};
      overrides.insert(overrides.end(), extra.begin(), extra.end());
      std::vector<std::string> argv = run_.args(overrides);
      argv.insert(argv.end(), {"--rank", std::to_string(rank), "--world-size", "2", "--rendezvous",
                               "tcp:" + hosts_->address("rank0") + ":" + std::to_string(kRendezvousPort),
                               "--auth-token-file", token_});
      ranks_[rank].emplace(hosts_->command_in("rank" + std::to_string(rank), argv), rank_log(rank));
    }
    // learner.address appears once a rank listens; rank 1's under rank 0's run directory.
    ASSERT_TRUE(eventually(120, [&] {
      const std::string dir = run_.run_dir();
      return !dir.empty() && !read_file(dir + "/learner.address").empty() &&
             !read_file(dir + "/ranks/1/learner.address").empty();
    })) << read_file(rank_log(0)) << read_file(rank_log(1));
  }

  // An actor in host act<rank> for rank `rank`, through a relay adding `delay_ms` each way.
  ChildProcess& start_actor(int rank, double delay_ms, const std::string& token_path) {
    const std::string host = "act" + std::to_string(rank);
    const std::string relay_log = run_.runs_dir + "/relay-" + std::to_string(processes_.size()) + ".log";
    processes_.push_back(std::make_unique<ChildProcess>(
        hosts_->command_in(host, delay_relay_args("127.0.0.1:0", rank_address(rank), delay_ms)), relay_log));
    const int port = relay_port(relay_log, 60);
    EXPECT_GT(port, 0) << read_file(relay_log);
    const std::string log = run_.runs_dir + "/actor-" + std::to_string(processes_.size()) + ".log";
    processes_.push_back(std::make_unique<ChildProcess>(
        hosts_->command_in(host, {kBinary, "actor", "--connect", "tcp:127.0.0.1:" + std::to_string(port),
                                  "--auth-token-file", token_path, "--reconnect-for", "10"}),
        log));
    actor_logs_.push_back(log);
    return *processes_.back();
  }

  std::vector<MetricsRow> rank_rows(int rank) const {
    return read_metrics(run_.run_dir() + (rank == 0 ? "" : "/ranks/1") + "/metrics.jsonl");
  }

  std::string weights_hash(int rank) const {
    std::ifstream in(run_.run_dir() + (rank == 0 ? "" : "/ranks/1") + "/metrics.jsonl");
    const std::string tag = "\"weights_hash\": \"";
    std::string found;
    for (std::string line; std::getline(in, line);) {
      const size_t at = line.find(tag);
      if (at != std::string::npos) found = line.substr(at + tag.size(), 16);
    }
    return found;
  }

  TrainingRun run_{kExample, {}, "moonseed-netns-group"};
  std::optional<HostNetwork> hosts_;  // before the processes: destroyed after them
  std::optional<ChildProcess> ranks_[2];
  std::vector<std::unique_ptr<ChildProcess>> processes_;  // relays and actors
  std::vector<std::string> actor_logs_;
  std::string token_;
};

// Ranks listening on every interface of their hosts: an actor on a third host given rank 0's
// address with --any-rank is sent to rank 1 at the address rank 1's host is reached at.
TEST_F(GroupOnHosts, AnActorThatLetsTheGroupPlaceItIsSentToTheOtherRanksHost) {
  start_group(kUntilStopped, {"topology.listen=\"tcp:0.0.0.0:" + std::to_string(kActorPort) + "\""});
  const auto actors_on = [&](int rank) { return last(rank_rows(0), "rank" + std::to_string(rank) + "_actors"); };
  ASSERT_TRUE(eventually(60, [&] { return last(rank_rows(0), "learners_reporting") == 2; })) << read_file(rank_log(0));
  for (int k = 0; k < 2; ++k) {
    const std::string log = run_.runs_dir + "/placed-" + std::to_string(k) + ".log";
    processes_.push_back(std::make_unique<ChildProcess>(
        hosts_->command_in("act0", {kBinary, "actor", "--connect", "tcp:" + rank_address(0), "--any-rank",
                                    "--auth-token-file", token_}),
        log));
    actor_logs_.push_back(log);
    ASSERT_TRUE(eventually(120, [&] { return actors_on(0) + actors_on(1) == k + 1; }))
        << read_file(rank_log(0)) << read_file(log);
  }
  EXPECT_EQ(actors_on(0), 1);
  EXPECT_EQ(actors_on(1), 1);
  EXPECT_NE(read_file(actor_logs_[1]).find("sent to tcp:" + rank_address(1)), std::string::npos)
      << read_file(actor_logs_[1]);
  const Finished stop = run_to_end({kBinary, "ctl", run_.run_dir(), "stop"}, run_.runs_dir + "/ctl.log", 60);
  EXPECT_EQ(stop.exit_code, std::optional<int>(0)) << stop.output;
  EXPECT_EQ(ranks_[0]->wait(120), std::optional<int>(0)) << read_file(rank_log(0));
  EXPECT_EQ(ranks_[1]->wait(120), std::optional<int>(0)) << read_file(rank_log(1));
}

TEST_F(GroupOnHosts, TwoRanksOnTwoHostsTrainOneModelThroughLatencyAndRefuseAWrongToken) {
  start_group("stop.frames=60000");
  start_actor(0, 5, token_);
  start_actor(1, 5, token_);
  // A third actor with another token: refused by rank 1, with a message; the group trains on.
  ChildProcess& wrong = start_actor(1, 0, token_file("wrong", "not the group's token"));
  const std::optional<int> refused = wrong.wait(120);
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(*refused, 4) << read_file(actor_logs_.back());
  EXPECT_NE(read_file(actor_logs_.back()).find("wrong auth token"), std::string::npos) << read_file(actor_logs_.back());

  ASSERT_EQ(ranks_[0]->wait(240), std::optional<int>(0)) << read_file(rank_log(0)) << read_file(rank_log(1));
  ASSERT_EQ(ranks_[1]->wait(120), std::optional<int>(0)) << read_file(rank_log(1));
  const std::vector<MetricsRow> rows = rank_rows(0);
  EXPECT_GE(last(rows, "frames"), 60000);
  EXPECT_GT(last(rows, "rank1_frames"), 0);
  EXPECT_GT(last(rank_rows(1), "auth_failures"), 0);
  EXPECT_FALSE(weights_hash(0).empty());
  EXPECT_EQ(weights_hash(0), weights_hash(1)) << "the ranks ended with different weights";
}

TEST_F(GroupOnHosts, AnActorHostCutOffLeavesTheRanksTrainingAndItsActorRejoins) {
  start_group(kUntilStopped, {"topology.actor_timeout_s=2"});
  start_actor(0, 1, token_);
  start_actor(1, 1, token_);
  ASSERT_TRUE(eventually(120, [&] { return last(rank_rows(0), "rank1_frames") > 0; })) << read_file(rank_log(0));

  hosts_->cut("act1");
  // Rank 1 has no data now; the group trains on with rank 0's batches.
  ASSERT_TRUE(eventually(60, [&] { return last(rank_rows(1), "actors") == 0; })) << read_file(rank_log(1));
  const double steps = last(rank_rows(0), "optimizer_steps");
  const double rank1_frames = last(rank_rows(1), "frames");
  ASSERT_TRUE(eventually(60, [&] { return last(rank_rows(0), "optimizer_steps") > steps + 20; }))
      << read_file(rank_log(0));
  EXPECT_EQ(last(rank_rows(1), "frames"), rank1_frames) << "rank 1 got data through a cut link";

  hosts_->restore("act1");
  ASSERT_TRUE(eventually(120, [&] { return last(rank_rows(1), "frames") > rank1_frames + 1000; }))
      << read_file(rank_log(1)) << read_file(actor_logs_[1]);
  EXPECT_GE(read_events(run_.run_dir() + "/ranks/1/metrics.jsonl", "actor_joined").size(), 2u);

  const Finished stop = run_to_end({kBinary, "ctl", run_.run_dir(), "stop"}, run_.runs_dir + "/ctl.log", 60);
  EXPECT_EQ(stop.exit_code, std::optional<int>(0)) << stop.output;
  EXPECT_EQ(ranks_[0]->wait(120), std::optional<int>(0)) << read_file(rank_log(0));
  EXPECT_EQ(ranks_[1]->wait(120), std::optional<int>(0)) << read_file(rank_log(1));
  EXPECT_EQ(weights_hash(0), weights_hash(1));
}

TEST_F(GroupOnHosts, ARankWhoseHostIsCutOffStopsTheGroupNamingIt) {
  start_group(kUntilStopped, {"topology.group_timeout_s=5"});
  start_actor(0, 0, token_);
  start_actor(1, 0, token_);
  ASSERT_TRUE(eventually(120, [&] { return last(rank_rows(0), "rank1_frames") > 0; })) << read_file(rank_log(0));
  hosts_->cut("rank1");
  const std::optional<int> code = ranks_[0]->wait(120);
  ASSERT_EQ(code, std::optional<int>(3)) << read_file(rank_log(0));
  EXPECT_NE(read_file(rank_log(0)).find("rank 1 (host"), std::string::npos) << read_file(rank_log(0));
  // Rank 1, cut off from the store and from rank 0, stops by itself too.
  EXPECT_EQ(ranks_[1]->wait(120), std::optional<int>(3)) << read_file(rank_log(1));
  hosts_->restore("rank1");
}

}  // namespace
}  // namespace moonseed::testing
