// The delaying relay (tests/netns/delay_relay.cc) as a real process on
// loopback, between a client and a server in this test: the delay it adds (a
// lower bound only: a loaded machine only ever adds time), bytes intact and in
// order both ways, a close carried across, and memory bounded when the
// receiver stops reading.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/e2e/process.h"
#include "tests/netns/delay_relay.h"

namespace moonseed::testing {
namespace {

// An owned socket.
struct Socket {
  int fd = -1;
  explicit Socket(int f = -1) : fd(f) {}
  ~Socket() {
    if (fd >= 0) ::close(fd);
  }
  Socket(Socket&& o) noexcept : fd(o.fd) { o.fd = -1; }
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;
};

// A server on 127.0.0.1 that the relay connects to.
struct Server {
  Socket listener{::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)};
  int port = 0;

  Server() {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (::bind(listener.fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(listener.fd, 8) != 0 ||
        ::getsockname(listener.fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
      throw std::runtime_error(std::string("test server: ") + std::strerror(errno));
    }
    port = ntohs(a.sin_port);
  }
  // The relay's connection, once it comes within 30 s; fd -1 otherwise.
  Socket accept() const {
    pollfd p{listener.fd, POLLIN, 0};
    if (::poll(&p, 1, 30000) != 1) return Socket();
    return Socket(::accept4(listener.fd, nullptr, nullptr, SOCK_CLOEXEC));
  }
};

Socket connect_to(int port) {
  Socket s(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  if (::connect(s.fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    throw std::runtime_error(std::string("connect to the relay: ") + std::strerror(errno));
  }
  int one = 1;
  ::setsockopt(s.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return s;
}

bool send_all(int fd, const char* data, size_t n) {
  while (n > 0) {
    const ssize_t k = ::send(fd, data, n, MSG_NOSIGNAL);
    if (k <= 0) return false;
    data += k;
    n -= static_cast<size_t>(k);
  }
  return true;
}

// Reads exactly n bytes, waiting at most `timeout_s` for each read; false on EOF, error or timeout.
bool recv_exact(int fd, char* data, size_t n, double timeout_s = 30) {
  while (n > 0) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(timeout_s * 1000)) != 1) return false;
    const ssize_t k = ::recv(fd, data, n, 0);
    if (k <= 0) return false;
    data += k;
    n -= static_cast<size_t>(k);
  }
  return true;
}

// True when `fd` reads EOF (the other side closed) within `timeout_s`.
bool closes_within(int fd, double timeout_s) {
  pollfd p{fd, POLLIN, 0};
  char byte;
  return ::poll(&p, 1, static_cast<int>(timeout_s * 1000)) == 1 && ::recv(fd, &byte, 1, 0) == 0;
}

// A relay process from 127.0.0.1:0 to `server` with `delay_ms`.
struct Relay {
  std::string dir = make_temp_dir("moonseed-relay");
  ChildProcess process;
  int port;
  Relay(const Server& server, double delay_ms, long max_buffered = 1 << 20)
      : process(delay_relay_args("127.0.0.1:0", "127.0.0.1:" + std::to_string(server.port), delay_ms, max_buffered),
                dir + "/relay.log"),
        port(relay_port(dir + "/relay.log", 30)) {}
};

// A client connected through a relay of `delay_ms` to a server: `peer` is the server's end.
struct ThroughRelay {
  Server server;
  Relay relay;
  Socket client;
  Socket peer;
  ThroughRelay(double delay_ms, long max_buffered = 1 << 20)
      : relay(server, delay_ms, max_buffered),
        client(relay.port > 0 ? connect_to(relay.port) : Socket()),
        peer(server.accept()) {}
  // Why the connection is not up, or "".
  std::string problem() const {
    if (relay.port <= 0) return "the relay never listened: " + read_file(relay.dir + "/relay.log");
    return peer.fd < 0 ? "the relay never connected to the server" : "";
  }
};

std::vector<char> pattern(size_t n) {
  std::mt19937 random(12345);
  std::vector<char> v(n);
  for (char& c : v) c = static_cast<char>(random());
  return v;
}

TEST(DelayRelay, ARoundTripThroughItTakesAtLeastTwiceItsDelay) {
  ThroughRelay r(20);
  ASSERT_EQ(r.problem(), "");
  const int client = r.client.fd, peer = r.peer.fd;
  for (int i = 0; i < 5; ++i) {
    char byte = static_cast<char>('a' + i);
    const auto start = std::chrono::steady_clock::now();
    ASSERT_TRUE(send_all(client, &byte, 1));
    ASSERT_TRUE(recv_exact(peer, &byte, 1));
    const double one_way_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    ASSERT_TRUE(send_all(peer, &byte, 1));
    ASSERT_TRUE(recv_exact(client, &byte, 1));
    const double round_trip_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    EXPECT_EQ(byte, 'a' + i);
    EXPECT_GE(one_way_ms, 20.0);
    EXPECT_GE(round_trip_ms, 40.0);
  }
}

TEST(DelayRelay, BytesArriveIntactAndInOrderBothWaysThroughASmallBuffer) {
  ThroughRelay r(1, 16 * 1024);  // a buffer far smaller than what crosses: backpressure at work
  ASSERT_EQ(r.problem(), "");
  const int client = r.client.fd, peer = r.peer.fd;
  const std::vector<char> up = pattern(4 << 20), down = pattern(3 << 20);
  std::vector<char> got_up(up.size()), got_down(down.size());
  // Both ways at once, each side sending from its own thread while this one reads.
  std::thread client_sends([&] { send_all(client, up.data(), up.size()); });
  std::thread peer_sends([&] { send_all(peer, down.data(), down.size()); });
  std::thread peer_reads([&] { EXPECT_TRUE(recv_exact(peer, got_up.data(), got_up.size())); });
  EXPECT_TRUE(recv_exact(client, got_down.data(), got_down.size()));
  peer_reads.join();
  client_sends.join();
  peer_sends.join();
  EXPECT_TRUE(got_up == up) << "client -> server bytes differ";
  EXPECT_TRUE(got_down == down) << "server -> client bytes differ";
}

TEST(DelayRelay, AClientThatClosesClosesTheServerSideAfterItsBytes) {
  ThroughRelay r(5);
  ASSERT_EQ(r.problem(), "");
  ASSERT_TRUE(send_all(r.client.fd, "last", 4));
  ::close(r.client.fd);
  r.client.fd = -1;
  char got[4];
  ASSERT_TRUE(recv_exact(r.peer.fd, got, 4)) << "bytes sent before the close still arrive";
  EXPECT_EQ(std::string(got, 4), "last");
  EXPECT_TRUE(closes_within(r.peer.fd, 30));
}

TEST(DelayRelay, AServerThatClosesClosesTheClientSide) {
  ThroughRelay r(5);
  ASSERT_EQ(r.problem(), "");
  ::close(r.peer.fd);
  r.peer.fd = -1;
  EXPECT_TRUE(closes_within(r.client.fd, 30));
}

TEST(DelayRelay, AnUnreachableTargetClosesTheClient) {
  int port = 0;
  {
    Server gone;  // a port that nobody listens on once this closes
    port = gone.port;
  }
  Server fake;
  fake.port = port;
  Relay relay(fake, 5);
  ASSERT_GT(relay.port, 0) << read_file(relay.dir + "/relay.log");
  Socket client = connect_to(relay.port);
  EXPECT_TRUE(closes_within(client.fd, 30));
}

// Memory: a receiver that never reads stops the sender once the relay's buffer
// and the sockets' are full, far short of what the sender tried to send.
TEST(DelayRelay, AReceiverThatNeverReadsHoldsTheRelayToItsBufferBound) {
  ThroughRelay r(1, 256 * 1024);  // r.peer never reads
  ASSERT_EQ(r.problem(), "");
  const int client = r.client.fd;
  ::fcntl(client, F_SETFL, O_NONBLOCK);
  const std::vector<char> block = pattern(64 * 1024);
  constexpr size_t kTried = size_t{512} << 20;
  size_t sent = 0;
  // Send until the socket has stayed full for 2 s in a row (or everything went, which fails below).
  while (sent < kTried) {
    const ssize_t k = ::send(client, block.data(), block.size(), MSG_NOSIGNAL);
    if (k > 0) {
      sent += static_cast<size_t>(k);
      continue;
    }
    ASSERT_TRUE(errno == EAGAIN || errno == EWOULDBLOCK) << std::strerror(errno);
    pollfd p{client, POLLOUT, 0};
    if (::poll(&p, 1, 2000) == 0) break;
  }
  const std::string status = read_file("/proc/" + std::to_string(r.relay.process.pid()) + "/status");
  const size_t rss_at = status.find("VmRSS:");
  ASSERT_NE(rss_at, std::string::npos);
  const long rss_kb = std::stol(status.substr(rss_at + 6));
  std::printf("sent %zu MiB before the relay held back; relay RSS %ld KiB\n", sent >> 20, rss_kb);
  EXPECT_LT(sent, kTried / 4) << "the relay kept reading what nobody received";
  EXPECT_LT(rss_kb, 64 * 1024);
}

}  // namespace
}  // namespace moonseed::testing
