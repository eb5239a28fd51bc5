// Hostile peers against a real Server over real sockets: huge claimed frames
// before a Hello, idle and half-sent connections, too many of them, and
// guessed auth tokens. Each test asserts what the peer gets (a Bye with the
// reason, the close) and what the server counts (Server::stats()).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "rpc/client.h"
#include "rpc/server.h"
#include "tests/rpc/echo_service.h"
#include "tests/rpc/raw_peer.h"
#include "tests/rpc/sample_messages.h"

namespace moonseed::rpc {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::EchoService;
using testing::RawPeer;

enum class Transport { kUnix, kTcp };

// True once `condition` holds; false after 10 s.
bool eventually(const std::function<bool()>& condition) {
  for (int i = 0; i < 1000; ++i) {
    if (condition()) return true;
    std::this_thread::sleep_for(milliseconds(10));
  }
  return condition();
}

// The 8-byte segment table of a one-segment frame of `bytes` (a multiple of 8).
std::vector<uint8_t> header_claiming(size_t bytes) {
  const uint32_t table[2] = {0, static_cast<uint32_t>((bytes - 8) / 8)};
  std::vector<uint8_t> header(8);
  std::memcpy(header.data(), table, sizeof table);
  return header;
}

// The Bye the peer reads next (an empty reason when something else arrives).
Bye next_bye(RawPeer& peer) {
  const auto message = peer.read_message();
  if (!message || !std::holds_alternative<Bye>(*message)) {
    ADD_FAILURE() << "expected a Bye";
    return Bye{};
  }
  return std::get<Bye>(*message);
}

class Limits : public ::testing::TestWithParam<Transport> {
 protected:
  void SetUp() override {
    std::string pattern = (std::filesystem::temp_directory_path() / "moonseed-limits-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    server_.reset();
    std::filesystem::remove_all(dir_);
  }

  void start(const ServerOptions& options) {
    server_ = std::make_unique<Server>(service_, options);
    address_ = server_->listen(GetParam() == Transport::kUnix ? "unix:" + dir_ + "/learner.sock"
                                                              : "tcp:127.0.0.1:0");
    server_->start();
  }

  // A RawPeer that has said Hello and read its Welcome; its actor id in `id`.
  std::unique_ptr<RawPeer> admitted_peer(int32_t& id) {
    auto peer = std::make_unique<RawPeer>(address_);
    peer->write(encode(testing::sample_hello()));
    const auto welcome = peer->read_message();
    EXPECT_TRUE(welcome && std::holds_alternative<Welcome>(*welcome));
    id = welcome && std::holds_alternative<Welcome>(*welcome) ? std::get<Welcome>(*welcome).actor_id : -1;
    return peer;
  }

  EchoService service_;  // outlives the server
  std::string dir_;
  std::unique_ptr<Server> server_;
  Address address_;
};

TEST_P(Limits, AHugeFrameClaimedBeforeHelloIsRefusedFromItsHeader) {
  start(ServerOptions{});
  RawPeer peer(address_);
  ::testing::internal::CaptureStderr();
  peer.write(header_claiming(size_t{64} << 20));
  const Bye bye = next_bye(peer);
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(bye.reason.find("before Hello (at most 65536 bytes until admitted)"), std::string::npos)
      << bye.reason;
  EXPECT_NE(log.find("before Hello"), std::string::npos) << log;
  EXPECT_TRUE(peer.wait_closed());
  EXPECT_EQ(server_->stats().oversized_hellos, 1);
  EXPECT_TRUE(eventually([&] { return server_->stats().connections == 0; }));
  EXPECT_EQ(server_->stats().unauthenticated_buffer_bytes, 0);
  EXPECT_EQ(service_.hellos().size(), 0u);
}

// Even where a claim is allowed, what it holds follows the bytes received.
TEST_P(Limits, MemoryHeldBeforeHelloGrowsWithTheBytesReceivedNotWithTheClaim) {
  ServerOptions options;
  options.max_hello_frame_bytes = size_t{128} << 20;  // let the 64 MiB claim stand
  start(options);
  RawPeer peer(address_);
  std::vector<uint8_t> bytes = header_claiming(size_t{64} << 20);
  bytes.resize(bytes.size() + 10000, 0);
  peer.write(bytes);
  ASSERT_TRUE(eventually([&] { return server_->stats().bytes_received >= static_cast<int64_t>(bytes.size()); }));
  const ServerStats stats = server_->stats();
  EXPECT_EQ(stats.unauthenticated, 1);
  EXPECT_GT(stats.unauthenticated_buffer_bytes, 0);
  EXPECT_LT(stats.unauthenticated_buffer_bytes, 64 << 10);
  EXPECT_EQ(stats.buffer_bytes, stats.unauthenticated_buffer_bytes);
}

TEST_P(Limits, AnAdmittedActorsLargeFramesAreStillRead) {
  start(ServerOptions{});
  int32_t id = -1;
  auto peer = admitted_peer(id);
  EXPECT_EQ(server_->stats().unauthenticated, 0);
  const StepBatch batch = testing::sample_step_batch(3, 64, 4096);  // 256 KiB: above the Hello limit
  peer->write(encode(batch));
  const auto reply = peer->read_message();
  ASSERT_TRUE(reply && std::holds_alternative<ActionBatch>(*reply));
  EXPECT_EQ(std::get<ActionBatch>(*reply).actions, testing::echo_reply(batch).actions);
}

TEST_P(Limits, AConnectionWithoutAHelloIsClosedAtItsDeadline) {
  ServerOptions options;
  options.hello_timeout = milliseconds(200);
  start(options);
  RawPeer idle(address_);
  RawPeer half(address_);
  const std::vector<uint8_t> hello = encode(testing::sample_hello());
  half.write(std::vector<uint8_t>(hello.begin(), hello.begin() + 20));
  ::testing::internal::CaptureStderr();
  EXPECT_NE(next_bye(idle).reason.find("no Hello within 0.2 s"), std::string::npos);
  EXPECT_NE(next_bye(half).reason.find("no Hello within 0.2 s"), std::string::npos);
  EXPECT_TRUE(idle.wait_closed());
  EXPECT_TRUE(half.wait_closed());
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(log.find("closing connection: no Hello within 0.2 s"), std::string::npos) << log;
  EXPECT_EQ(server_->stats().hello_timeouts, 2);
  EXPECT_TRUE(eventually([&] { return server_->stats().connections == 0; }));
}

TEST_P(Limits, AFrameStartedButNotFinishedClosesTheConnectionAtItsDeadline) {
  ServerOptions options;
  options.frame_timeout = milliseconds(200);
  start(options);
  int32_t id = -1;
  auto peer = admitted_peer(id);
  // Idle between frames is no problem: a batch after several frame timeouts is answered.
  std::this_thread::sleep_for(milliseconds(600));
  const StepBatch batch = testing::sample_step_batch(1, 4);
  peer->write(encode(batch));
  const auto reply = peer->read_message();
  ASSERT_TRUE(reply && std::holds_alternative<ActionBatch>(*reply));
  // Half a frame, then nothing.
  const std::vector<uint8_t> frame = encode(testing::sample_step_batch(2, 4));
  ::testing::internal::CaptureStderr();
  peer->write(std::vector<uint8_t>(frame.begin(), frame.begin() + 24));
  const std::string reason = service_.wait_for_disconnect(id);
  ::testing::internal::GetCapturedStderr();
  EXPECT_NE(reason.find("a frame started 0.2 s ago is still not whole (24 bytes of it arrived)"),
            std::string::npos)
      << reason;
  EXPECT_EQ(next_bye(*peer).reason, reason);
  EXPECT_EQ(server_->stats().frame_timeouts, 1);
}

TEST_P(Limits, ConnectionsBeyondTheUnauthenticatedCapAreRefusedAtOnceAndLoggedOnce) {
  ServerOptions options;
  options.max_unauthenticated = 3;
  start(options);
  std::vector<std::unique_ptr<RawPeer>> waiting;
  for (int i = 0; i < 3; ++i) waiting.push_back(std::make_unique<RawPeer>(address_));
  ASSERT_TRUE(eventually([&] { return server_->stats().unauthenticated == 3; }));

  ::testing::internal::CaptureStderr();
  for (int i = 0; i < 5; ++i) {
    RawPeer over(address_);
    const Bye bye = next_bye(over);
    EXPECT_NE(bye.reason.find("3 connections waiting to say Hello"), std::string::npos) << bye.reason;
    EXPECT_TRUE(bye.reconnect);
    EXPECT_TRUE(over.wait_closed());
  }
  const std::string log = ::testing::internal::GetCapturedStderr();
  size_t lines = 0;
  for (size_t at = log.find("waiting to say Hello"); at != std::string::npos;
       at = log.find("waiting to say Hello", at + 1)) {
    ++lines;
  }
  EXPECT_EQ(lines, 1u) << log;
  EXPECT_EQ(server_->stats().refused_over_cap, 5);
  // A Client told so may try again: a ConnectionError, not a refusal of its
  // Hello (it may even fail to send the Hello, the connection being closed).
  try {
    Client client = Client::connect(address_, seconds(10));
    client.hello(testing::sample_hello(), seconds(10));
    ADD_FAILURE() << "admitted over the cap";
  } catch (const HandshakeRefused& e) {
    ADD_FAILURE() << "a refusal: " << e.what();
  } catch (const ConnectionError&) {
  }

  // One of the waiting says Hello: there is room again.
  waiting[0]->write(encode(testing::sample_hello()));
  const auto welcome = waiting[0]->read_message();
  ASSERT_TRUE(welcome && std::holds_alternative<Welcome>(*welcome));
  EXPECT_TRUE(eventually([&] { return server_->stats().unauthenticated == 2; }));
  Client client = Client::connect(address_, seconds(10));
  EXPECT_GE(client.hello(testing::sample_hello(), seconds(10)).actor_id, 0);
}

TEST_P(Limits, WrongTokensFromOneAddressGetItsHellosRefusedUnchecked) {
  service_.require_token("s3cret-token");
  ServerOptions options;
  options.auth_free_failures = 2;
  options.auth_block_first = seconds(60);  // longer than the test
  start(options);
  Hello wrong = testing::sample_hello();
  wrong.auth_token = "guess";
  ::testing::internal::CaptureStderr();
  for (int i = 0; i < 2; ++i) {
    Client client = Client::connect(address_, seconds(10));
    try {
      client.hello(wrong, seconds(10));
      ADD_FAILURE() << "a wrong token was admitted";
    } catch (const HandshakeRefused& e) {
      EXPECT_EQ(e.reason(), "wrong auth token");
    }
  }
  // Now even the right token is not looked at, until the block ends.
  Client client = Client::connect(address_, seconds(10));
  std::string outcome = "admitted";
  try {
    client.hello(testing::sample_hello(), seconds(10));
  } catch (const std::exception& e) {
    outcome = e.what();
  }
  ::testing::internal::GetCapturedStderr();
  const ServerStats stats = server_->stats();
  EXPECT_EQ(stats.auth_failures, 2);
  if (GetParam() == Transport::kTcp) {
    EXPECT_NE(outcome.find("too many wrong auth tokens from 127.0.0.1: its Hellos are refused unchecked for"),
              std::string::npos)
        << outcome;
    EXPECT_EQ(stats.hellos_throttled, 1);
    EXPECT_EQ(service_.hellos().size(), 2u) << "the service saw a blocked Hello";
  } else {
    // A Unix socket has no address to block (and only the learner's user can connect).
    EXPECT_EQ(outcome, "admitted");
    EXPECT_EQ(stats.hellos_throttled, 0);
  }
}

TEST_P(Limits, AfterTheBlockTheRightTokenIsAdmittedAndClearsTheAddress) {
  service_.require_token("s3cret-token");
  ServerOptions options;
  options.auth_free_failures = 1;
  options.auth_block_first = milliseconds(100);
  start(options);
  Hello wrong = testing::sample_hello();
  wrong.auth_token = "guess";
  ::testing::internal::CaptureStderr();
  {
    Client client = Client::connect(address_, seconds(10));
    EXPECT_THROW(client.hello(wrong, seconds(10)), HandshakeRefused);
  }
  bool admitted = false;
  for (int i = 0; i < 200 && !admitted; ++i) {
    Client client = Client::connect(address_, seconds(10));
    try {
      client.hello(testing::sample_hello(), seconds(10));
      admitted = true;
    } catch (const HandshakeRefused& e) {
      ADD_FAILURE() << "refused: " << e.reason();
      break;
    } catch (const ConnectionError&) {
      std::this_thread::sleep_for(milliseconds(20));  // blocked: try again, as an actor does
    }
  }
  ::testing::internal::GetCapturedStderr();
  EXPECT_TRUE(admitted);
  EXPECT_EQ(server_->stats().auth_failures, 1);
}

// Guesses rotated over more addresses than the per-address throttle keeps
// (1,100 of 127/8, real sockets bound to each): the global budget bounds the
// tokens checked, the log stays a few lines, and the right token still gets in.
TEST(GlobalAuthBudget, GuessesFromManyAddressesAreCheckedWithinTheBudget) {
  EchoService service;
  service.require_token("s3cret-token");
  ServerOptions options;
  options.auth_budget_burst = 50;
  options.auth_budget_per_s = 5;
  options.log_interval = seconds(3600);  // one line, then the summary at stop()
  auto server = std::make_unique<Server>(service, options);
  const Address address = server->listen("tcp:127.0.0.1:0");
  server->start();
  // An actor admitted before the flood: its address is trusted.
  {
    RawPeer actor(address, "127.0.0.1");
    actor.write(encode(testing::sample_hello()));
    const auto welcome = actor.read_message();
    ASSERT_TRUE(welcome && std::holds_alternative<Welcome>(*welcome));
  }

  Hello wrong = testing::sample_hello();
  wrong.auth_token = "guess";
  const std::vector<uint8_t> guess = encode(wrong);
  constexpr int kAddresses = 1100;
  ::testing::internal::CaptureStderr();
  const auto start = std::chrono::steady_clock::now();
  for (int round = 0; round < 4; ++round) {
    for (int a = 0; a < kAddresses; ++a) {
      RawPeer guesser(address, "127.0." + std::to_string(10 + a / 250) + "." + std::to_string(1 + a % 250));
      guesser.write(guess);
      const Bye bye = next_bye(guesser);
      ASSERT_FALSE(bye.reason.empty());
    }
  }
  const double elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // While the budget is spent, the trusted address is still checked and admitted.
  {
    RawPeer actor(address, "127.0.0.1");
    actor.write(encode(testing::sample_hello()));
    const auto welcome = actor.read_message();
    EXPECT_TRUE(welcome && std::holds_alternative<Welcome>(*welcome)) << "the admitted address was refused";
  }
  // A new address gets in once the budget refills, retrying as an actor does.
  bool admitted = false;
  for (int i = 0; i < 1000 && !admitted; ++i) {
    RawPeer actor(address, "127.1.2.3");
    actor.write(encode(testing::sample_hello()));
    const auto reply = actor.read_message();
    admitted = reply && std::holds_alternative<Welcome>(*reply);
    if (!admitted) {
      ASSERT_TRUE(reply && std::holds_alternative<Bye>(*reply));
      ASSERT_TRUE(std::get<Bye>(*reply).reconnect) << std::get<Bye>(*reply).reason;
      std::this_thread::sleep_for(milliseconds(50));
    }
  }
  EXPECT_TRUE(admitted);
  const ServerStats stats = server->stats();
  server.reset();  // logs the summary not logged yet
  const std::string log = ::testing::internal::GetCapturedStderr();

  const int64_t budget = options.auth_budget_burst + static_cast<int64_t>(options.auth_budget_per_s * elapsed_s) + 1;
  EXPECT_LE(stats.auth_failures, budget) << "wrong tokens checked in " << elapsed_s << " s";
  EXPECT_GT(stats.hellos_over_budget, 0);
  // What the service was asked to check: the guesses, and the three right tokens.
  EXPECT_EQ(static_cast<int64_t>(service.hellos().size()), stats.auth_failures + 3);
  EXPECT_LT(log.size(), 2000u) << "bytes logged";
  EXPECT_LE(std::count(log.begin(), log.end(), '\n'), 2) << log;
  EXPECT_NE(log.find("unchecked (now blocking: "), std::string::npos) << log;
}

INSTANTIATE_TEST_SUITE_P(OverUnixAndTcp, Limits, ::testing::Values(Transport::kUnix, Transport::kTcp),
                         [](const ::testing::TestParamInfo<Transport>& info) {
                           return info.param == Transport::kUnix ? "Unix" : "Tcp";
                         });

}  // namespace
}  // namespace moonseed::rpc
