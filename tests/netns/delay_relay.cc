// delay_relay: a TCP relay that adds latency, for tests and benches of actors
// on other hosts. The kernel these run on has no netem qdisc, so the delay of
// a link is made here, in user space.
//
// usage: delay_relay LISTEN_IP:PORT TARGET_IP:PORT DELAY_MS [MAX_BUFFERED_BYTES]
//
// Every accepted connection gets its own connection to TARGET; bytes go both
// ways, each chunk read held DELAY_MS (one way, fractions allowed) before it is
// written on, in order. A direction holds at most MAX_BUFFERED_BYTES (default
// 1 MiB): past that the relay stops reading its source, so TCP's own flow
// control slows the sender down (backpressure), and memory stays bounded.
// Both sockets have TCP_NODELAY. When either side closes (or fails), the bytes
// it sent before are still delivered after their delay, then both sides are
// closed. A target that cannot be reached closes the accepted connection.
// Once listening it prints `delay_relay: listening on IP:PORT` (PORT 0 picks
// one) on stdout. Runs until killed.
//
// Threads: one, around ppoll (sub-millisecond timeouts). IPv4 addresses only.
// Exit codes: 2 bad arguments, 1 the listening socket failed.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kReadBytes = 64 * 1024;

std::optional<sockaddr_in> parse_endpoint(const std::string& text) {
  const size_t colon = text.rfind(':');
  if (colon == std::string::npos) return std::nullopt;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  if (::inet_pton(AF_INET, text.substr(0, colon).c_str(), &a.sin_addr) != 1) return std::nullopt;
  char* end = nullptr;
  const long port = std::strtol(text.c_str() + colon + 1, &end, 10);
  if (*end != '\0' || port < 0 || port > 65535) return std::nullopt;
  a.sin_port = htons(static_cast<uint16_t>(port));
  return a;
}

// An owned file descriptor.
class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  int release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }

 private:
  int fd_;
};

void set_nodelay(int fd) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

struct Chunk {
  Clock::time_point due;  // when it may be written on
  std::vector<char> bytes;
  size_t sent = 0;
};

// Bytes on their way from one socket to the other.
struct Direction {
  std::deque<Chunk> chunks;
  size_t buffered = 0;
  bool source_closed = false;

  bool has_room(size_t max_buffered) const { return !source_closed && buffered < max_buffered; }
  bool head_due(Clock::time_point now) const { return !chunks.empty() && chunks.front().due <= now; }
  bool drained_and_closed() const { return source_closed && chunks.empty(); }
};

enum class Io { kOk, kClosed };

// Reads what `from` has (at most the room left) into a chunk due after `delay`.
Io read_into(int from, Direction& d, size_t max_buffered, Clock::duration delay) {
  Chunk c;
  c.bytes.resize(std::min(kReadBytes, max_buffered - d.buffered));
  const ssize_t n = ::recv(from, c.bytes.data(), c.bytes.size(), 0);
  if (n < 0) return errno == EAGAIN || errno == EINTR ? Io::kOk : Io::kClosed;
  if (n == 0) {
    d.source_closed = true;
    return Io::kOk;
  }
  c.bytes.resize(static_cast<size_t>(n));
  c.due = Clock::now() + delay;
  d.buffered += c.bytes.size();
  d.chunks.push_back(std::move(c));
  return Io::kOk;
}

// Writes the chunks of `d` that are due to `to`, until the socket is full.
Io write_due(int to, Direction& d) {
  const Clock::time_point now = Clock::now();
  while (d.head_due(now)) {
    Chunk& c = d.chunks.front();
    const ssize_t n = ::send(to, c.bytes.data() + c.sent, c.bytes.size() - c.sent, MSG_NOSIGNAL);
    if (n < 0) return errno == EAGAIN || errno == EINTR ? Io::kOk : Io::kClosed;
    c.sent += static_cast<size_t>(n);
    if (c.sent < c.bytes.size()) return Io::kOk;
    d.buffered -= c.bytes.size();
    d.chunks.pop_front();
  }
  return Io::kOk;
}

// One accepted connection and its connection to the target.
struct Link {
  Fd client;
  Fd target;
  bool connecting = true;  // the target's non-blocking connect has not finished
  Direction up;            // client -> target
  Direction down;          // target -> client
  bool done = false;

  Link(int client_fd, int target_fd) : client(client_fd), target(target_fd) {}
};

class Relay {
 public:
  Relay(int listener, sockaddr_in target, Clock::duration delay, size_t max_buffered)
      : listener_(listener), target_(target), delay_(delay), max_buffered_(max_buffered) {}

  [[noreturn]] void run() {
    std::vector<pollfd> fds;
    for (;;) {
      fds.clear();
      fds.push_back({listener_.get(), POLLIN, 0});
      const Clock::time_point now = Clock::now();
      std::optional<Clock::time_point> wake;
      for (const auto& l : links_) {
        short client_events = 0, target_events = 0;
        if (l->up.has_room(max_buffered_)) client_events |= POLLIN;
        if (l->down.head_due(now)) client_events |= POLLOUT;
        if (l->connecting) {
          target_events = POLLOUT;
        } else {
          if (l->down.has_room(max_buffered_)) target_events |= POLLIN;
          if (l->up.head_due(now)) target_events |= POLLOUT;
        }
        fds.push_back({l->client.get(), client_events, 0});
        fds.push_back({l->target.get(), target_events, 0});
        for (const Direction* d : {&l->up, &l->down}) {
          if (!d->chunks.empty() && d->chunks.front().due > now && (!wake || d->chunks.front().due < *wake)) {
            wake = d->chunks.front().due;
          }
        }
      }
      timespec timeout{};
      if (wake) {
        const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(*wake - now).count();
        timeout.tv_sec = static_cast<time_t>(ns / 1000000000);
        timeout.tv_nsec = static_cast<long>(ns % 1000000000);
      }
      if (::ppoll(fds.data(), fds.size(), wake ? &timeout : nullptr, nullptr) < 0 && errno != EINTR) {
        std::perror("delay_relay: ppoll");
        std::exit(1);
      }
      for (size_t i = 0; i < links_.size(); ++i) serve(*links_[i], fds[1 + 2 * i].revents, fds[2 + 2 * i].revents);
      links_.erase(std::remove_if(links_.begin(), links_.end(), [](const std::unique_ptr<Link>& l) { return l->done; }),
                   links_.end());
      if (fds[0].revents & POLLIN) accept_all();
    }
  }

 private:
  void serve(Link& l, short client_revents, short target_revents) {
    if (l.connecting && target_revents) {
      int error = 0;
      socklen_t len = sizeof error;
      ::getsockopt(l.target.get(), SOL_SOCKET, SO_ERROR, &error, &len);
      if (error != 0) {
        std::fprintf(stderr, "delay_relay: connect to target failed: %s\n", std::strerror(error));
        l.done = true;
        return;
      }
      l.connecting = false;
      target_revents = 0;  // its readiness is the connect's, not data's
    }
    if ((client_revents | target_revents) & POLLERR) {
      l.done = true;
      return;
    }
    // A hang-up on a socket we are not reading from: its peer is gone both ways.
    const bool hung_up = (client_revents & POLLHUP && !(client_revents & POLLIN)) ||
                         (target_revents & POLLHUP && !(target_revents & POLLIN));
    Io io = Io::kOk;
    if (client_revents & POLLIN) io = read_into(l.client.get(), l.up, max_buffered_, delay_);
    if (io == Io::kOk && !l.connecting && target_revents & POLLIN) {
      io = read_into(l.target.get(), l.down, max_buffered_, delay_);
    }
    if (io == Io::kOk && !l.connecting) io = write_due(l.target.get(), l.up);
    if (io == Io::kOk) io = write_due(l.client.get(), l.down);
    l.done = io == Io::kClosed || hung_up || l.up.drained_and_closed() || l.down.drained_and_closed();
  }

  void accept_all() {
    for (;;) {
      const int client = ::accept4(listener_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (client < 0) return;  // EAGAIN, or out of descriptors: the kernel keeps it queued
      const int target = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
      auto link = std::make_unique<Link>(client, target);
      if (target < 0) continue;
      set_nodelay(client);
      set_nodelay(target);
      const int r = ::connect(target, reinterpret_cast<const sockaddr*>(&target_), sizeof target_);
      if (r < 0 && errno != EINPROGRESS) {
        std::fprintf(stderr, "delay_relay: connect to target failed: %s\n", std::strerror(errno));
        continue;
      }
      links_.push_back(std::move(link));
    }
  }

  Fd listener_;
  const sockaddr_in target_;
  const Clock::duration delay_;
  const size_t max_buffered_;
  std::vector<std::unique_ptr<Link>> links_;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4 || argc > 5) {
    std::fprintf(stderr, "usage: delay_relay LISTEN_IP:PORT TARGET_IP:PORT DELAY_MS [MAX_BUFFERED_BYTES]\n");
    return 2;
  }
  const std::optional<sockaddr_in> listen_at = parse_endpoint(argv[1]);
  const std::optional<sockaddr_in> target = parse_endpoint(argv[2]);
  char* end = nullptr;
  const double delay_ms = std::strtod(argv[3], &end);
  const long long max_buffered = argc == 5 ? std::atoll(argv[4]) : 1 << 20;
  if (!listen_at || !target || *end != '\0' || !(delay_ms >= 0) || max_buffered < 1) {
    std::fprintf(stderr, "delay_relay: bad arguments (IPv4 IP:PORT twice, DELAY_MS >= 0, MAX_BUFFERED_BYTES >= 1)\n");
    return 2;
  }
  Fd listener(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  int one = 1;
  ::setsockopt(listener.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in bound = *listen_at;
  socklen_t len = sizeof bound;
  if (::bind(listener.get(), reinterpret_cast<const sockaddr*>(&bound), sizeof bound) < 0 ||
      ::listen(listener.get(), 128) < 0 || ::getsockname(listener.get(), reinterpret_cast<sockaddr*>(&bound), &len) < 0) {
    std::fprintf(stderr, "delay_relay: cannot listen on %s: %s\n", argv[1], std::strerror(errno));
    return 1;
  }
  char ip[INET_ADDRSTRLEN] = {};
  ::inet_ntop(AF_INET, &bound.sin_addr, ip, sizeof ip);
  std::printf("delay_relay: listening on %s:%u\n", ip, ntohs(bound.sin_port));
  std::fflush(stdout);
  const auto delay = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double, std::milli>(delay_ms));
  Relay(listener.release(), *target, delay, static_cast<size_t>(max_buffered)).run();
}
