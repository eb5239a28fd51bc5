// Server and Client over real sockets: Unix and TCP loopback.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "rpc/client.h"
#include "rpc/server.h"
#include "tests/rpc/echo_service.h"
#include "tests/rpc/raw_peer.h"
#include "tests/rpc/sample_messages.h"

namespace moonseed::rpc {
namespace {

using std::chrono::seconds;
using testing::EchoService;
using testing::RawPeer;

enum class Transport { kUnix, kTcp };

std::string temp_dir() {
  std::string pattern = (std::filesystem::temp_directory_path() / "moonseed-rpc-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) ADD_FAILURE() << "mkdtemp failed";
  return pattern;
}

// A frame whose segment table is fine but whose body is not a Cap'n Proto message.
std::vector<uint8_t> garbage_frame() {
  std::vector<uint8_t> frame(8 + 8 * 4, 0xff);
  const uint32_t table[2] = {0, 4};
  std::memcpy(frame.data(), table, sizeof table);
  return frame;
}

template <typename T>
T expect_incoming(Incoming in) {
  if (auto* closed = std::get_if<Closed>(&in)) ADD_FAILURE() << "closed: " << closed->reason;
  if (std::holds_alternative<Timeout>(in)) ADD_FAILURE() << "timed out";
  EXPECT_TRUE(std::holds_alternative<T>(in)) << "got index " << in.index();
  return std::holds_alternative<T>(in) ? std::get<T>(std::move(in)) : T{};
}

class ServerClient : public ::testing::TestWithParam<Transport> {
 protected:
  void SetUp() override {
    dir_ = temp_dir();
    start_server(ServerOptions{});
  }

  void TearDown() override {
    stop_pump();  // a test that failed half way may have left it running
    server_.reset();
    std::filesystem::remove_all(dir_);
  }

  // Serves `service` (the fixture's EchoService when null), which must
  // outlive the server.
  void start_server(const ServerOptions& options, ActorService* service = nullptr) {
    server_.reset();
    server_ = std::make_unique<Server>(service ? *service : service_, options);
    address_ = server_->listen(GetParam() == Transport::kUnix ? "unix:" + dir_ + "/learner.sock"
                                                              : "tcp:127.0.0.1:0");
    server_->start();
  }

  // A server without io threads, run by a pump thread of the test's (as the
  // inference thread runs it): stop the pump with stop_pump().
  // `between_turns`, if given, runs on the pump thread after each turn, where
  // the learner's inference thread runs a batch and replies.
  void start_pumped_server(std::chrono::milliseconds slice, ActorService* service = nullptr,
                           std::function<void()> between_turns = nullptr) {
    ServerOptions options;
    options.io_threads = 0;
    start_server(options, service);
    pumping_ = true;
    pump_ = std::thread([this, slice, between_turns = std::move(between_turns)] {
      while (pumping_) {
        server_->run_for(slice);
        if (between_turns) between_turns();
      }
    });
  }
  void stop_pump() {
    pumping_ = false;
    if (pump_.joinable()) pump_.join();
  }

  // Connects and completes the handshake; returns the client and its actor id.
  std::pair<Client, int32_t> connect_actor() {
    Client client = Client::connect(address_, seconds(10));
    const Welcome welcome = client.hello(testing::sample_hello(), seconds(10));
    return {std::move(client), welcome.actor_id};
  }

  EchoService service_;  // declared first: outlives the server
  std::string dir_;
  std::unique_ptr<Server> server_;
  Address address_;
  std::atomic<bool> pumping_{false};
  std::thread pump_;
};

TEST_P(ServerClient, HandshakeDeliversTheServicesWelcomeAndConnectsTheActor) {
  Client client = Client::connect(address_, seconds(10));
  const Welcome welcome = client.hello(testing::sample_hello(), seconds(10));
  EXPECT_EQ(welcome.actor_id, 100);
  EXPECT_EQ(welcome.run_id, testing::sample_welcome().run_id);
  EXPECT_EQ(welcome.env_spec.observation.shape, std::vector<int64_t>{4});
  ASSERT_NE(service_.wait_for_link(100), nullptr);
  ASSERT_EQ(service_.hellos().size(), 1u);
  EXPECT_EQ(service_.hellos()[0].host, "actor-host.example");
  EXPECT_EQ(service_.hellos()[0].pid, 4242);
}

TEST_P(ServerClient, StepBatchIsAnsweredWithTheServicesActionBatch) {
  auto [client, actor_id] = connect_actor();
  const StepBatch batch = testing::sample_step_batch(42, 16, 16);
  client.send(batch);
  const ActionBatch reply = expect_incoming<ActionBatch>(client.receive(seconds(10)));
  EXPECT_EQ(reply.seq, 42u);
  EXPECT_EQ(reply.actions, testing::echo_reply(batch).actions);
}

TEST_P(ServerClient, ManyPipelinedBatchesAreAllAnsweredAndMatchedBySeq) {
  auto [client, actor_id] = connect_actor();
  constexpr uint64_t kBatches = 500;
  for (uint64_t seq = 0; seq < kBatches; ++seq) {
    client.send(testing::sample_step_batch(seq, 1 + seq % 64, 16));
  }
  std::map<uint64_t, std::vector<uint8_t>> replies;
  Incoming in;
  for (uint64_t i = 0; i < kBatches; ++i) {
    client.receive_into(in, seconds(10));
    ASSERT_TRUE(std::holds_alternative<ActionBatch>(in)) << "reply " << i << ": index "
                                                         << in.index();
    const ActionBatch& reply = std::get<ActionBatch>(in);
    EXPECT_TRUE(replies.emplace(reply.seq, reply.actions).second) << "seq twice: " << reply.seq;
  }
  ASSERT_EQ(replies.size(), kBatches);
  for (uint64_t seq = 0; seq < kBatches; ++seq) {
    EXPECT_EQ(replies[seq], testing::echo_reply(testing::sample_step_batch(seq, 1 + seq % 64))
                                .actions)
        << "seq " << seq;
  }
}

// Replies written from service threads take the direct path; frames large
// enough to fill the socket buffer leave partial writes for the strand to
// finish. Nothing may interleave, reorder per sender, or be lost.
TEST_P(ServerClient, LargeRepliesFromTwoServiceThreadsArriveWholeAndInOrder) {
  auto [client, actor_id] = connect_actor();
  std::shared_ptr<ActorLink> link = service_.wait_for_link(actor_id);
  ASSERT_TRUE(link);
  constexpr uint64_t kEach = 100;
  constexpr size_t kBytes = 200 * 1024;
  auto payload = [](uint64_t i) { return std::vector<uint8_t>(kBytes, static_cast<uint8_t>(i * 7 + 1)); };
  std::thread actions([&] {
    for (uint64_t i = 0; i < kEach; ++i) {
      ActionBatch batch;
      batch.seq = i;
      batch.actions = payload(i);
      link->send_actions(std::move(batch));
    }
  });
  std::thread configs([&] {
    for (uint64_t i = 0; i < kEach; ++i) {
      ConfigUpdate update;
      update.config_version = i;
      update.payload = std::string(kBytes / 2, static_cast<char>('a' + i % 26));
      link->send_config(std::move(update));
    }
  });
  uint64_t next_seq = 0, next_version = 0;
  Incoming in;
  for (uint64_t i = 0; i < 2 * kEach; ++i) {
    client.receive_into(in, seconds(10));
    if (auto* batch = std::get_if<ActionBatch>(&in)) {
      EXPECT_EQ(batch->seq, next_seq);
      EXPECT_EQ(batch->actions, payload(batch->seq));
      ++next_seq;
    } else if (auto* update = std::get_if<ConfigUpdate>(&in)) {
      EXPECT_EQ(update->config_version, next_version);
      EXPECT_EQ(update->payload, std::string(kBytes / 2, static_cast<char>('a' + next_version % 26)));
      ++next_version;
    } else {
      ADD_FAILURE() << "message " << i << ": variant index " << in.index();
      break;
    }
  }
  actions.join();
  configs.join();
  EXPECT_EQ(next_seq, kEach);
  EXPECT_EQ(next_version, kEach);
}

TEST_P(ServerClient, ConcurrentActorsOnTwoIoThreadsEachGetTheirOwnReplies) {
  ServerOptions options;
  options.io_threads = 2;
  start_server(options);
  constexpr int kActors = 4;
  constexpr uint64_t kBatches = 200;
  std::vector<std::thread> actors;
  std::vector<int> answered(kActors, 0);
  for (int a = 0; a < kActors; ++a) {
    actors.emplace_back([&, a] {
      auto [client, actor_id] = connect_actor();
      for (uint64_t seq = 0; seq < kBatches; ++seq) {
        StepBatch batch = testing::sample_step_batch(seq, 8);
        batch.env_begin = static_cast<uint32_t>(a * 8);
        client.send(batch);
      }
      Incoming in;
      for (uint64_t seq = 0; seq < kBatches; ++seq) {
        client.receive_into(in, seconds(10));
        StepBatch expected = testing::sample_step_batch(seq, 8);
        expected.env_begin = static_cast<uint32_t>(a * 8);
        if (std::holds_alternative<ActionBatch>(in) &&
            std::get<ActionBatch>(in).actions == testing::echo_reply(expected).actions) {
          ++answered[a];
        }
      }
    });
  }
  for (auto& actor : actors) actor.join();
  EXPECT_EQ(answered, std::vector<int>(kActors, static_cast<int>(kBatches)));
}

TEST_P(ServerClient, MalformedFrameClosesOnlyThatConnectionWithALoggedReason) {
  auto [healthy, healthy_id] = connect_actor();
  RawPeer bad(address_);
  bad.write(encode(testing::sample_hello()));
  auto welcome = bad.read_message();
  ASSERT_TRUE(welcome && std::holds_alternative<Welcome>(*welcome));
  const int32_t bad_id = std::get<Welcome>(*welcome).actor_id;

  ::testing::internal::CaptureStderr();
  bad.write(garbage_frame());
  const std::string reason = service_.wait_for_disconnect(bad_id);
  const std::string log = ::testing::internal::GetCapturedStderr();

  EXPECT_NE(reason.find("bad frame"), std::string::npos) << reason;
  EXPECT_NE(log.find("bad frame"), std::string::npos) << log;
  EXPECT_NE(log.find("actor " + std::to_string(bad_id)), std::string::npos) << log;
  EXPECT_NE(log.find(GetParam() == Transport::kUnix ? "unix:" : "tcp:127.0.0.1:"),
            std::string::npos)
      << "peer missing from: " << log;
  EXPECT_TRUE(bad.wait_closed());

  const StepBatch batch = testing::sample_step_batch(9, 4);
  healthy.send(batch);
  EXPECT_EQ(expect_incoming<ActionBatch>(healthy.receive(seconds(10))).actions,
            testing::echo_reply(batch).actions);
}

TEST_P(ServerClient, StepBatchBeforeHelloClosesTheConnectionWithAByeSayingSo) {
  RawPeer peer(address_);
  ::testing::internal::CaptureStderr();
  peer.write(encode(testing::sample_step_batch(1, 2)));
  auto bye = peer.read_message();
  const std::string log = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(bye && std::holds_alternative<Bye>(*bye));
  EXPECT_NE(std::get<Bye>(*bye).reason.find("expected Hello first, got StepBatch"),
            std::string::npos);
  EXPECT_NE(log.find("expected Hello first"), std::string::npos) << log;
  EXPECT_TRUE(peer.wait_closed());
  EXPECT_EQ(service_.connects(), 0);
}

TEST_P(ServerClient, FrameAboveMaxFrameBytesClosesTheConnection) {
  ServerOptions options;
  options.limits.max_frame_bytes = 4096;
  start_server(options);
  auto [client, actor_id] = connect_actor();
  ::testing::internal::CaptureStderr();
  client.send(testing::sample_step_batch(1, 64, 128));  // 8 KiB of observations
  const std::string reason = service_.wait_for_disconnect(actor_id);
  ::testing::internal::GetCapturedStderr();
  EXPECT_NE(reason.find("max_frame_bytes 4096"), std::string::npos) << reason;
}

TEST_P(ServerClient, ProtocolVersionMismatchIsRefusedWithTheReasonVisibleToTheClient) {
  Client client = Client::connect(address_, seconds(10));
  Hello hello = testing::sample_hello();
  hello.protocol_version = kProtocolVersion + 98;
  ::testing::internal::CaptureStderr();
  try {
    client.hello(hello, seconds(10));
    ADD_FAILURE() << "handshake accepted";
  } catch (const HandshakeRefused& refused) {
    EXPECT_NE(refused.reason().find("protocol version " + std::to_string(kProtocolVersion + 98)),
              std::string::npos)
        << refused.reason();
  }
  ::testing::internal::GetCapturedStderr();
  EXPECT_TRUE(service_.hellos().empty()) << "the service saw an incompatible Hello";
}

TEST_P(ServerClient, RefusalByTheServiceReachesTheClientWithItsReason) {
  service_.refuse_with("all 8 actor slots are taken");
  Client client = Client::connect(address_, seconds(10));
  ::testing::internal::CaptureStderr();
  try {
    client.hello(testing::sample_hello(), seconds(10));
    ADD_FAILURE() << "handshake accepted";
  } catch (const HandshakeRefused& refused) {
    EXPECT_EQ(refused.reason(), "all 8 actor slots are taken");
  }
  ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(service_.connects(), 0);
}

TEST_P(ServerClient, ConfigUpdateSentThroughTheLinkReachesTheClient) {
  auto [client, actor_id] = connect_actor();
  std::shared_ptr<ActorLink> link = service_.wait_for_link(actor_id);
  ASSERT_NE(link, nullptr);
  link->send_config(testing::sample_config_update());
  const ConfigUpdate update = expect_incoming<ConfigUpdate>(client.receive(seconds(10)));
  EXPECT_EQ(update.config_version, testing::sample_config_update().config_version);
  EXPECT_EQ(update.payload, testing::sample_config_update().payload);
}

TEST_P(ServerClient, ActorNoticeFromTheClientReachesTheServiceAndTheStreamGoesOn) {
  auto [client, actor_id] = connect_actor();
  client.send(testing::sample_actor_notice());
  const ActorNotice notice = service_.wait_for_notice(actor_id);
  EXPECT_EQ(notice.config_version, testing::sample_actor_notice().config_version);
  EXPECT_EQ(notice.text, testing::sample_actor_notice().text);
  client.send(testing::sample_step_batch(5, 2));
  EXPECT_EQ(expect_incoming<ActionBatch>(client.receive(seconds(10))).seq, 5u);
}

TEST_P(ServerClient, ByeFromTheServiceReachesTheClientAndEndsTheConnection) {
  auto [client, actor_id] = connect_actor();
  service_.wait_for_link(actor_id)->send_bye("run finished");
  EXPECT_EQ(expect_incoming<Bye>(client.receive(seconds(10))).reason, "run finished");
  EXPECT_TRUE(std::holds_alternative<Closed>(client.receive(seconds(10))));
  EXPECT_EQ(service_.wait_for_disconnect(actor_id), "run finished");
}

TEST_P(ServerClient, AReconnectByeReachesTheClientSayingSo) {
  auto [client, actor_id] = connect_actor();
  service_.wait_for_link(actor_id)->send_reconnect("no step batch for 31.0 s");
  const Bye bye = expect_incoming<Bye>(client.receive(seconds(10)));
  EXPECT_EQ(bye.reason, "no step batch for 31.0 s");
  EXPECT_TRUE(bye.reconnect);
  EXPECT_TRUE(std::holds_alternative<Closed>(client.receive(seconds(10))));
  EXPECT_EQ(service_.wait_for_disconnect(actor_id), "no step batch for 31.0 s");
}

TEST_P(ServerClient, ClientCloseIsReportedToTheServiceAsTheActorsBye) {
  auto [client, actor_id] = connect_actor();
  client.close("actor shutting down");
  EXPECT_EQ(service_.wait_for_disconnect(actor_id), "actor said bye: actor shutting down");
}

TEST_P(ServerClient, StopSendsByeToEveryConnectedClient) {
  auto [first, first_id] = connect_actor();
  auto [second, second_id] = connect_actor();
  server_->stop();
  EXPECT_EQ(expect_incoming<Bye>(first.receive(seconds(10))).reason, "learner stopping");
  EXPECT_EQ(expect_incoming<Bye>(second.receive(seconds(10))).reason, "learner stopping");
  EXPECT_TRUE(std::holds_alternative<Closed>(first.receive(seconds(10))));
  EXPECT_EQ(service_.wait_for_disconnect(first_id), "learner stopping");
  EXPECT_EQ(service_.wait_for_disconnect(second_id), "learner stopping");
}

// An actor that keeps streaming while the learner stops must still read the
// Bye: closing a socket with unread data resets it, and a reset can destroy
// the Bye in flight, which sends the actor into reconnecting to a dead run.
TEST_P(ServerClient, StopSaysByeEvenToAnActorThatKeepsStreaming) {
  auto [client, actor_id] = connect_actor();
  std::atomic<bool> streaming{true};
  std::thread sender([&, c = &client] {
    for (uint64_t seq = 1; streaming; ++seq) {
      try {
        c->send(testing::sample_step_batch(seq, 8));
      } catch (const std::exception&) {
        return;  // the server is gone
      }
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  // stop() waits for the sessions to close, which waits for the actor to read
  // its replies and the Bye: the actor reads here meanwhile, as a real one does.
  std::thread stopper([this] { server_->stop(); });
  bool got_bye = false;
  std::string last = "nothing";
  for (int i = 0; i < 1000000 && !got_bye; ++i) {
    Incoming in = client.receive(seconds(10));
    if (std::holds_alternative<ActionBatch>(in)) continue;
    got_bye = std::holds_alternative<Bye>(in);
    if (auto* closed = std::get_if<Closed>(&in)) last = "closed: " + closed->reason;
    if (std::holds_alternative<Timeout>(in)) last = "timeout";
    if (!got_bye) break;
  }
  streaming = false;
  sender.join();
  stopper.join();
  EXPECT_TRUE(got_bye) << last;
  EXPECT_EQ(service_.wait_for_disconnect(actor_id), "learner stopping");
}

TEST_P(ServerClient, WithNoIoThreadsTheOwnersPumpServesActorsAndStopStillSaysBye) {
  start_pumped_server(std::chrono::milliseconds(10));
  auto [client, actor_id] = connect_actor();
  const StepBatch batch = testing::sample_step_batch(7, 4, 16);
  client.send(batch);
  ActionBatch reply = expect_incoming<ActionBatch>(client.receive(seconds(10)));
  EXPECT_EQ(reply.seq, 7u);
  EXPECT_EQ(reply.actions, testing::echo_reply(batch).actions);

  server_->stop();  // while the owner still pumps
  EXPECT_EQ(expect_incoming<Bye>(client.receive(seconds(10))).reason, "learner stopping");
  EXPECT_EQ(service_.wait_for_disconnect(actor_id), "learner stopping");
  stop_pump();
}

// Without io threads a session's handlers have no strand: the pump and
// stop() must take turns running them, even with every actor streaming.
TEST_P(ServerClient, APumpedServerStoppedWhileFourActorsStreamSaysByeToEachOnce) {
  start_pumped_server(std::chrono::milliseconds(1));
  struct Actor {
    Client client;
    int32_t id;
  };
  std::vector<Actor> actors;
  for (int i = 0; i < 4; ++i) {
    auto [client, id] = connect_actor();
    actors.push_back(Actor{std::move(client), id});
  }
  std::vector<std::thread> senders;
  std::vector<std::string> ends(actors.size());  // each sender stops at the Bye
  for (size_t i = 0; i < actors.size(); ++i) {
    senders.emplace_back([&, i] {
      Client& c = actors[i].client;
      for (uint64_t seq = 1;; ++seq) {
        try {
          c.send(testing::sample_step_batch(seq, 8));
        } catch (const std::exception&) {
          break;
        }
        Incoming in = c.receive(seconds(10));
        if (std::holds_alternative<ActionBatch>(in)) continue;
        if (auto* bye = std::get_if<Bye>(&in)) ends[i] = "bye: " + bye->reason;
        break;
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  server_->stop();
  for (auto& t : senders) t.join();
  for (size_t i = 0; i < actors.size(); ++i) {
    EXPECT_EQ(ends[i], "bye: learner stopping") << "actor " << i;
    EXPECT_EQ(service_.wait_for_disconnect(actors[i].id), "learner stopping");
  }
  stop_pump();
}

// Replies made on the pump thread between its turns, as the learner's
// inference thread makes them: a pumped server starts a session's next read
// only at the turn after the one that read its frame, so each reply goes out
// before the read that waits for the answer to it.
class HeldRepliesService : public testing::EchoService {
 public:
  void on_steps(const std::shared_ptr<ActorLink>& link, StepBatch&& batch) override {
    std::lock_guard<std::mutex> lock(mu_);
    held_.emplace_back(link, std::move(batch));
  }
  void reply_to_held() {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [link, batch] : held_) link->send_actions(testing::echo_reply(batch));
    replied_ += held_.size();
    held_.clear();
  }
  size_t replied() const {
    std::lock_guard<std::mutex> lock(mu_);
    return replied_;
  }

 private:
  mutable std::mutex mu_;
  std::vector<std::pair<std::shared_ptr<ActorLink>, StepBatch>> held_;  // guarded by mu_
  size_t replied_ = 0;                                                  // guarded by mu_
};

TEST_P(ServerClient, APumpedServerWhoseOwnerRepliesBetweenTurnsKeepsEveryActorStreaming) {
  HeldRepliesService held;
  start_pumped_server(std::chrono::milliseconds(5), &held, [&held] { held.reply_to_held(); });
  constexpr int kActors = 3;
  constexpr uint64_t kRoundTrips = 300;
  std::vector<std::thread> actors;
  std::vector<std::string> problems(kActors);
  for (int a = 0; a < kActors; ++a) {
    actors.emplace_back([&, a] {
      Client client = Client::connect(address_, seconds(10));
      client.hello(testing::sample_hello(), seconds(10));
      for (uint64_t seq = 1; seq <= kRoundTrips; ++seq) {
        const StepBatch batch = testing::sample_step_batch(seq, 1 + (seq + a) % 32, 16);
        client.send(batch);
        Incoming in = client.receive(seconds(10));
        const auto* reply = std::get_if<ActionBatch>(&in);
        if (!reply || reply->seq != seq || reply->actions != testing::echo_reply(batch).actions) {
          problems[a] = "round trip " + std::to_string(seq) + " got no matching reply";
          return;
        }
      }
    });
  }
  for (auto& t : actors) t.join();
  for (int a = 0; a < kActors; ++a) EXPECT_EQ(problems[a], "") << "actor " << a;
  server_->stop();  // while the pump still runs, with reads deferred
  stop_pump();
  EXPECT_EQ(held.replied(), kActors * kRoundTrips);
  server_.reset();  // before `held`
}

TEST_P(ServerClient, LinkKeptPastTheServersDestructionDropsItsSends) {
  auto [client, actor_id] = connect_actor();
  std::shared_ptr<ActorLink> link = service_.wait_for_link(actor_id);
  ASSERT_NE(link, nullptr);
  server_.reset();
  link->send_actions(testing::sample_action_batch(1, 4));
  link->send_bye("too late");
  EXPECT_EQ(link->actor_id(), actor_id);
  EXPECT_EQ(expect_incoming<Bye>(client.receive(seconds(10))).reason, "learner stopping");
  EXPECT_TRUE(std::holds_alternative<Closed>(client.receive(seconds(10))));
}

TEST_P(ServerClient, ReceiveWithNothingPendingTimesOut) {
  auto [client, actor_id] = connect_actor();
  EXPECT_TRUE(std::holds_alternative<Timeout>(client.receive(std::chrono::milliseconds(20))));
  EXPECT_TRUE(client.is_open());
}

INSTANTIATE_TEST_SUITE_P(OverUnixAndTcp, ServerClient,
                         ::testing::Values(Transport::kUnix, Transport::kTcp),
                         [](const ::testing::TestParamInfo<Transport>& info) {
                           return info.param == Transport::kUnix ? "Unix" : "Tcp";
                         });

}  // namespace
}  // namespace moonseed::rpc
