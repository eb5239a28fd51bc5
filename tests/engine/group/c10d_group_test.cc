// C10dGroup with real c10d stores and Gloo process groups: ranks are threads of
// this process (each with its own store clients and Gloo connections, over a
// FileStore or a TCPStore on 127.0.0.1). What a killed or stopped rank
// process does to the others is tested end to end (tests/e2e/group_test.cc).
#include "engine/group/c10d_group.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/free_port.h"

namespace moonseed::engine {
namespace {

std::string fresh_store_file() {
  static int n = 0;
  const std::string dir = ::testing::TempDir() + "/moonseed-group-" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/store-" + std::to_string(n++);
  std::filesystem::remove(path);
  return "file:" + path;
}


GroupOptions options(int rank, int world, const std::string& rendezvous, double timeout_s = 20) {
  GroupOptions o;
  o.rank = rank;
  o.world_size = world;
  o.rendezvous = rendezvous;
  o.timeout_s = timeout_s;
  o.check_every = 1;
  return o;
}

// Runs `body(rank, group)` on `world` threads, each rank joining the group first.
template <typename Body>
void with_ranks(int world, const std::string& rendezvous, Body body) {
  std::vector<std::future<void>> ranks;
  for (int r = 0; r < world; ++r) {
    ranks.push_back(std::async(std::launch::async, [&, r] {
      C10dGroup group(options(r, world, rendezvous));
      body(r, group);
      group.leave();
    }));
  }
  for (auto& f : ranks) f.get();
}

TEST(C10dGroup, RanksAgreeOnTheSumOfTheirFramesAndOnAStopAnyOfThemAsks) {
  std::vector<StepAgreement> seen(2);
  with_ranks(2, fresh_store_file(), [&](int rank, C10dGroup& group) {
    StepProposal p;
    p.frames = rank == 0 ? 1000 : 234;
    p.config_version = rank == 0 ? 7 : 0;
    p.stop = rank == 1;
    seen[static_cast<size_t>(rank)] = group.agree(p);
  });
  for (const StepAgreement& a : seen) {
    EXPECT_EQ(a.group_frames, 1234);
    EXPECT_TRUE(a.stop);
    EXPECT_FALSE(a.paused);
    EXPECT_EQ(a.config_version, 7u);
  }
}

TEST(C10dGroup, RankZerosCheckpointRequestIsEveryRanksAndItsBytesReachEveryRank) {
  std::vector<StepAgreement> seen(3);
  std::vector<std::string> got(3);
  // Bytes of every value, and more than one Gloo message's worth.
  std::string sent(300000, '\0');
  for (size_t i = 0; i < sent.size(); ++i) sent[i] = static_cast<char>(i * 131 % 256);
  with_ranks(3, fresh_store_file(), [&](int rank, C10dGroup& group) {
    StepProposal p;
    p.checkpoint = rank == 0;
    seen[static_cast<size_t>(rank)] = group.agree(p);
    std::string bytes = rank == 0 ? sent : "this rank's own, replaced";
    group.broadcast_from_rank0(bytes);
    got[static_cast<size_t>(rank)] = bytes;
  });
  for (int r = 0; r < 3; ++r) {
    EXPECT_TRUE(seen[static_cast<size_t>(r)].checkpoint) << "rank " << r;
    EXPECT_EQ(got[static_cast<size_t>(r)], sent) << "rank " << r;
  }
}

TEST(C10dGroup, AveragedGradientsAreTheMeanOverTheRanksOnEveryRank) {
  std::vector<torch::Tensor> after(2);
  with_ranks(2, fresh_store_file(), [&](int rank, C10dGroup& group) {
    torch::Tensor w = torch::zeros({2, 3}, torch::requires_grad());
    torch::Tensor b = torch::zeros({3}, torch::requires_grad());  // gets no gradient: counts as zeros
    w.mutable_grad() = torch::full({2, 3}, rank == 0 ? 1.0f : 3.0f);
    EXPECT_EQ(group.agree(StepProposal{}).batches, 2);
    group.average_gradients({w, b});
    after[static_cast<size_t>(rank)] = torch::cat({w.grad().reshape({-1}), b.grad().reshape({-1})});
  });
  const torch::Tensor expected = torch::cat({torch::full({6}, 2.0f), torch::zeros({3})});
  EXPECT_TRUE(torch::equal(after[0], expected)) << after[0];
  EXPECT_TRUE(torch::equal(after[1], expected)) << after[1];
}

TEST(C10dGroup, ARankWithoutABatchBringsZerosAndTheMeanIsOverTheRanksThatHadOne) {
  std::vector<torch::Tensor> after(3);
  with_ranks(3, fresh_store_file(), [&](int rank, C10dGroup& group) {
    torch::Tensor w = torch::zeros({4}, torch::requires_grad());
    StepProposal p;
    p.has_batch = rank != 2;
    w.mutable_grad() = p.has_batch ? torch::full({4}, rank == 0 ? 1.0f : 2.0f) : torch::zeros({4});
    EXPECT_EQ(group.agree(p).batches, 2);
    group.average_gradients({w});
    after[static_cast<size_t>(rank)] = w.grad().clone();
  });
  for (const torch::Tensor& g : after) EXPECT_TRUE(torch::equal(g, torch::full({4}, 1.5f))) << g;
}

TEST(C10dGroup, AWeightsHashThatDiffersStopsTheGroupNamingTheRankThatDiffers) {
  std::vector<std::string> errors(3);
  with_ranks(3, fresh_store_file(), [&](int rank, C10dGroup& group) {
    group.after_step(1, 42);  // equal: nothing happens
    try {
      group.after_step(2, rank == 2 ? 43 : 42);
    } catch (const GroupError& e) {
      errors[static_cast<size_t>(rank)] = e.what();
    }
  });
  for (const std::string& e : errors) {
    EXPECT_NE(e.find("rank 2 (host"), std::string::npos) << e;
    EXPECT_EQ(e.find("rank 1 (host"), std::string::npos) << e;
    EXPECT_NE(e.find("optimizer step 2"), std::string::npos) << e;
  }
}

TEST(C10dGroup, RanksMeetThroughATcpStoreThatRankZeroServes) {
  const std::string rendezvous = "tcp:127.0.0.1:" + std::to_string(testing::free_port());
  std::vector<std::string> run_dirs(2);
  with_ranks(2, rendezvous, [&](int rank, C10dGroup& group) {
    if (rank == 0) group.put("run_dir", "/runs/x");
    run_dirs[static_cast<size_t>(rank)] = group.get("run_dir");
    StepProposal p;
    p.frames = 5;
    EXPECT_EQ(group.agree(p).group_frames, 10);
    ASSERT_EQ(group.members().size(), 2u);
    EXPECT_EQ(group.members()[1].rank, 1);
    EXPECT_EQ(group.members()[1].pid, ::getpid());
  });
  EXPECT_EQ(run_dirs[0], "/runs/x");
  EXPECT_EQ(run_dirs[1], "/runs/x");
}

TEST(C10dGroup, ARankThatNeverJoinsIsNamedOnceTheTimeoutHasPassed) {
  try {
    C10dGroup group(options(0, 3, fresh_store_file(), /*timeout_s=*/1));
    FAIL() << "joined a group of 3 alone";
  } catch (const GroupError& e) {
    EXPECT_NE(std::string(e.what()).find("rank(s) 1, 2 of 3 did not join"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("topology.group_timeout_s"), std::string::npos) << e.what();
  }
}

TEST(C10dGroup, TheWatchdogNamesARankWhoseHeartbeatStopped) {
  const std::string rendezvous = fresh_store_file();
  // Rank 1 is a child process, killed (kill -9) once the group has met: it says nothing on its way.
  const pid_t child = ::fork();
  if (child == 0) {
    C10dGroup rank1(options(1, 2, rendezvous, /*timeout_s=*/1));
    for (;;) ::pause();
  }
  std::string failure;
  {
    C10dGroup group(options(0, 2, rendezvous, /*timeout_s=*/1));
    ::kill(child, SIGKILL);
    ::waitpid(child, nullptr, 0);
    for (int i = 0; i < 100 && group.failure().empty(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    failure = group.failure();
  }
  EXPECT_NE(failure.find("rank 1 (host"), std::string::npos) << failure;
  EXPECT_NE(failure.find("has not answered"), std::string::npos) << failure;
}

TEST(C10dGroup, ARankThatLeftIsNotBlamedWhenItsHeartbeatStops) {
  const std::string rendezvous = fresh_store_file();
  std::promise<void> joined;
  std::promise<void> rank1_left;
  std::string failure = "not read";
  std::thread rank0([&] {
    C10dGroup group(options(0, 2, rendezvous, /*timeout_s=*/1));
    joined.set_value();
    rank1_left.get_future().wait();
    std::this_thread::sleep_for(std::chrono::milliseconds(2500));
    failure = group.failure();
  });
  {
    C10dGroup rank1(options(1, 2, rendezvous, /*timeout_s=*/1));
    joined.get_future().wait();
    rank1.leave();
  }
  rank1_left.set_value();
  rank0.join();
  EXPECT_EQ(failure, "");
}

TEST(GroupOptions, RendezvousTextIsParsedOrRefusedWithTheFormItWants) {
  const Rendezvous tcp = parse_rendezvous("tcp:node001:29500");
  EXPECT_TRUE(tcp.tcp);
  EXPECT_EQ(tcp.host, "node001");
  EXPECT_EQ(tcp.port, 29500);
  EXPECT_EQ(parse_rendezvous("tcp:[::1]:7").host, "::1");
  EXPECT_EQ(parse_rendezvous("file:/tmp/s").path, "/tmp/s");
  for (const char* bad : {"node:29500", "tcp:node", "tcp:node:0", "tcp:node:70000", "tcp::1", "file:"}) {
    EXPECT_THROW(parse_rendezvous(bad), std::invalid_argument) << bad;
  }
  EXPECT_TRUE(loopback_host("127.0.0.1"));
  EXPECT_TRUE(loopback_host("localhost"));
  EXPECT_FALSE(loopback_host("node001"));
}

TEST(GroupOptions, TheAddressTowardsTheRendezvousIsTheOneThisHostSendsFrom) {
  EXPECT_EQ(local_address_towards("127.0.0.1", 29500), "127.0.0.1");
  EXPECT_EQ(local_address_towards("no-such-host.invalid", 29500), "");
}

}  // namespace
}  // namespace moonseed::engine
