// The run's Bye reaches an actor that is still sending when the learner
// closes: a raw learner socket (the fault needs what rpc::Server never does)
// says Welcome and Bye, lets the actor start a step batch far larger than the
// socket buffers hold, then resets the connection (or closes it, over a Unix
// socket) without reading. The actor is inside that send when the connection
// breaks and has not read the Bye yet, so it must find the Bye in what
// already arrived and exit kBye, not reconnect until it gives up
// (kUnreachable). No timing is involved: the batch cannot fit in the buffers.
#include <linux/sockios.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include <gtest/gtest.h>

#include "actor/actor_loop.h"
#include "envs/env_set.h"
#include "rpc/codec.h"
#include "rpc/frame_reader.h"

namespace moonseed::actor {

// gtest prints an ActorExit by name (found by ADL, so outside the unnamed namespace).
void PrintTo(ActorExit exit, std::ostream* out) { *out << to_string(exit); }

namespace {

constexpr int64_t kObservationBytes = int64_t{16} << 20;  // past any socket buffer here (4 MiB at most)
constexpr int kLearnerBufferBytes = 4096;                // the learner's receive buffer (SO_RCVBUF)
constexpr int kWaitMs = 20000;                           // generous bound of each wait

envs::EnvSpec huge_spec() {
  envs::EnvSpec spec;
  spec.id = "Huge-v0";
  spec.observation.kind = envs::SpaceKind::kBox;
  spec.observation.dtype = envs::DType::kUInt8;
  spec.observation.shape = {kObservationBytes};
  spec.action = envs::discrete_space(2);
  return spec;
}

// One env whose observation is kObservationBytes of zeros and whose steps never end.
class HugeEnvs final : public envs::EnvSet {
 public:
  const envs::EnvSpec& spec() const override { return spec_; }
  uint32_t size() const override { return 1; }
  void run(const envs::EnvSetCall& call, std::vector<envs::EnvError>&) override {
    envs::check_call_range(call, size());
    std::memset(call.observations, 0, static_cast<size_t>(kObservationBytes));
    call.rewards[0] = 0;
    call.flags[0] = call.ops[0] == envs::EnvOp::kReset ? envs::kFirst : 0;
  }

 private:
  envs::EnvSpec spec_ = huge_spec();
};

// Waits until `fd` has `events`; false after kWaitMs.
bool wait_for(int fd, short events) {
  pollfd p{fd, events, 0};
  return ::poll(&p, 1, kWaitMs) == 1;
}

void write_all(int fd, const std::vector<uint8_t>& bytes) {
  for (size_t at = 0; at < bytes.size();) {
    const ssize_t n = ::send(fd, bytes.data() + at, bytes.size() - at, MSG_NOSIGNAL);
    ASSERT_GT(n, 0) << std::strerror(errno);
    at += static_cast<size_t>(n);
  }
}

// A learner that admits one actor, says Bye at once and breaks the connection while the actor
// sends its first step batch. Its listening socket closes once the actor is in, so an actor that
// misses the Bye finds nobody when it reconnects.
class ClosingLearner {
 public:
  explicit ClosingLearner(bool tcp) : tcp_(tcp) {
    if (tcp_) {
      listener_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      // Before listen(): the accepted socket inherits it, and stays this small.
      ::setsockopt(listener_, SOL_SOCKET, SO_RCVBUF, &kLearnerBufferBytes, sizeof kLearnerBufferBytes);
      sockaddr_in sa{};
      sa.sin_family = AF_INET;
      sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      socklen_t length = sizeof sa;
      EXPECT_EQ(::bind(listener_, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0) << std::strerror(errno);
      ::getsockname(listener_, reinterpret_cast<sockaddr*>(&sa), &length);
      address_ = "tcp:127.0.0.1:" + std::to_string(ntohs(sa.sin_port));
    } else {
      dir_ = std::filesystem::temp_directory_path() / ("moonseed-actor-bye-" + std::to_string(::getpid()));
      std::filesystem::create_directories(dir_);
      const std::string path = (dir_ / "l.sock").string();
      listener_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
      sockaddr_un sa{};
      sa.sun_family = AF_UNIX;
      std::strncpy(sa.sun_path, path.c_str(), sizeof sa.sun_path - 1);
      EXPECT_EQ(::bind(listener_, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0) << std::strerror(errno);
      address_ = "unix:" + path;
    }
    EXPECT_EQ(::listen(listener_, 4), 0) << std::strerror(errno);
    thread_ = std::thread([this] { serve(); });
  }
  ~ClosingLearner() {
    finish();
    if (listener_ >= 0) ::close(listener_);
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  const std::string& address() const { return address_; }
  // Waits for the learner's end; returns the bytes of the actor's batch that waited unread when
  // the connection was broken.
  size_t finish() {
    if (thread_.joinable()) thread_.join();
    return unread_bytes_;
  }

 private:
  void serve() {
    ASSERT_TRUE(wait_for(listener_, POLLIN)) << "no actor came";
    const int fd = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
    ASSERT_GE(fd, 0) << std::strerror(errno);
    ::close(listener_);
    listener_ = -1;
    read_hello(fd);
    rpc::Welcome welcome;
    welcome.run_id = "bye-test";
    welcome.actor_id = 0;
    welcome.env_id = "Huge-v0";
    welcome.env_spec = huge_spec();
    welcome.num_envs = 1;
    welcome.num_groups = 1;
    write_all(fd, rpc::encode(welcome));
    write_all(fd, rpc::encode(rpc::Bye{"run finished", false, ""}));
    // The actor's batch is coming in: it has the Welcome, and sends before it reads again.
    EXPECT_TRUE(wait_for(fd, POLLIN)) << "the actor sent no step batch";
    if (tcp_) {
      // The actor's kernel has acknowledged the Bye: the reset below cannot discard it from ours.
      for (int waited_ms = 0; waited_ms < kWaitMs; ++waited_ms) {
        int unacknowledged = 0;
        if (::ioctl(fd, SIOCOUTQ, &unacknowledged) == 0 && unacknowledged == 0) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      // Reset for sure (as a close with unread bytes does anyway), not a FIN.
      const linger reset{1, 0};
      ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
    }
    int unread = 0;
    ::ioctl(fd, FIONREAD, &unread);
    unread_bytes_ = static_cast<size_t>(unread);
    ::close(fd);
  }

  void read_hello(int fd) {
    rpc::FrameReader reader{rpc::FrameLimits{}};
    for (;;) {
      rpc::FrameReader::Next next = reader.next();
      if (next.status == rpc::FrameReader::Next::Status::kFrame) {
        rpc::Message message;
        rpc::DecodeError error;
        ASSERT_TRUE(rpc::decode_into(next.data, next.size, rpc::FrameLimits{}, message, error)) << error.reason;
        ASSERT_TRUE(std::holds_alternative<rpc::Hello>(message)) << rpc::message_name(message);
        return;
      }
      ASSERT_EQ(next.status, rpc::FrameReader::Next::Status::kNeedMore) << next.error;
      ASSERT_TRUE(wait_for(fd, POLLIN)) << "no Hello";
      const ssize_t n = ::recv(fd, reader.write_ptr(), reader.writable(), 0);
      ASSERT_GT(n, 0) << "the actor left before its Hello";
      reader.commit(static_cast<size_t>(n));
    }
  }

  const bool tcp_;
  int listener_ = -1;
  std::filesystem::path dir_;
  std::string address_;
  size_t unread_bytes_ = 0;  // written by thread_, read after it ends
  std::thread thread_;
};

ActorExit run_against(const std::string& address) {
  ActorOptions options;
  options.address = address;
  options.verbose = false;
  options.reconnect_for_s = 1;  // a missed Bye ends as kUnreachable a second later
  options.make_envs = [](const rpc::Welcome&) { return std::make_unique<HugeEnvs>(); };
  const std::atomic<bool> stop{false};
  return run_actor(options, stop);
}

TEST(ActorLoopBye, AByeThenAResetWhileTheActorSendsOverTcpEndsTheActor) {
  ClosingLearner learner(/*tcp=*/true);
  EXPECT_EQ(run_against(learner.address()), ActorExit::kBye);
  EXPECT_GT(learner.finish(), 0u) << "the actor was not sending when the connection broke";
}

TEST(ActorLoopBye, AByeThenACloseWhileTheActorSendsOverAUnixSocketEndsTheActor) {
  ClosingLearner learner(/*tcp=*/false);
  EXPECT_EQ(run_against(learner.address()), ActorExit::kBye);
  EXPECT_GT(learner.finish(), 0u) << "the actor was not sending when the connection broke";
}

// What a proxy whose learner is gone does: it takes every connection and drops it
// before a word. The actor must pace its tries and give up after --reconnect-for as
// when nothing listens, not reconnect at once forever (each connect succeeds).
TEST(ActorLoopBye, ConnectionsThatAreNeverWelcomedAreRetriedWithBackoffUntilTheActorGivesUp) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("moonseed-actor-dropper-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "learner.sock").string();
  const int listener = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  std::strncpy(sa.sun_path, path.c_str(), sizeof sa.sun_path - 1);
  ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0) << std::strerror(errno);
  ASSERT_EQ(::listen(listener, 64), 0);
  std::atomic<bool> done{false};
  std::atomic<int> accepted{0};
  std::thread dropper([&] {
    while (!done) {
      pollfd p{listener, POLLIN, 0};
      if (::poll(&p, 1, 50) != 1) continue;
      const int fd = ::accept(listener, nullptr, nullptr);
      if (fd >= 0) {
        ++accepted;
        ::close(fd);
      }
    }
  });
  ActorOptions options;
  options.address = "unix:" + path;
  options.verbose = false;
  options.reconnect_for_s = 1;
  const std::atomic<bool> stop{false};
  const ActorExit exit = run_actor(options, stop);
  done = true;
  dropper.join();
  ::close(listener);
  std::filesystem::remove_all(dir);
  EXPECT_EQ(exit, ActorExit::kUnreachable);
  // Backoff from 0.1 s doubling: a handful of tries in the second it is given (thousands without it).
  EXPECT_GE(accepted.load(), 2);
  EXPECT_LE(accepted.load(), 10);
}

}  // namespace
}  // namespace moonseed::actor
