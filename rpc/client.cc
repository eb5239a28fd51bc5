#include "rpc/client.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <utility>

namespace moonseed::rpc {
namespace {

using Clock = std::chrono::steady_clock;

std::string errno_text(int error) { return std::strerror(error); }

// Waits until `fd` has `events` or the deadline passes. Returns false on timeout.
bool wait_for(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::nanoseconds>(deadline - Clock::now());
    timespec wait{};
    if (left.count() > 0) {
      wait.tv_sec = static_cast<time_t>(left.count() / 1000000000);
      wait.tv_nsec = static_cast<long>(left.count() % 1000000000);
    }
    pollfd p{fd, events, 0};
    const int ready = ::ppoll(&p, 1, &wait, nullptr);
    if (ready > 0) return true;
    if (ready == 0) return false;
    if (errno != EINTR) return true;  // let the following call report the error
  }
}

int connect_unix(const Address& address) {
  if (address.path.empty() || address.path.size() >= sizeof(sockaddr_un{}.sun_path)) {
    throw std::invalid_argument("unix socket path of " + std::to_string(address.path.size()) +
                                " bytes: must be 1.." +
                                std::to_string(sizeof(sockaddr_un{}.sun_path) - 1));
  }
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw ConnectionError("socket(AF_UNIX): " + errno_text(errno));
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  std::memcpy(sa.sun_path, address.path.c_str(), address.path.size() + 1);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
    const int error = errno;
    ::close(fd);
    throw ConnectionError("cannot connect to " + address.to_string() + ": " + errno_text(error));
  }
  return fd;
}

// One non-blocking connect to `ai`, bounded by the deadline. Returns the fd or
// -1 with `error` set.
int try_connect_tcp(const addrinfo* ai, Clock::time_point deadline, std::string& error) {
  const int fd = ::socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) {
    error = "socket: " + errno_text(errno);
    return -1;
  }
  if (::connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
    if (errno != EINPROGRESS) {
      error = errno_text(errno);
      ::close(fd);
      return -1;
    }
    if (!wait_for(fd, POLLOUT, deadline)) {
      error = "timed out";
      ::close(fd);
      return -1;
    }
    int so_error = 0;
    socklen_t length = sizeof so_error;
    ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &so_error, &length);
    if (so_error != 0) {
      error = errno_text(so_error);
      ::close(fd);
      return -1;
    }
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

int connect_tcp(const Address& address, Clock::time_point deadline) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string port = std::to_string(address.port);
  const int status = ::getaddrinfo(address.host.c_str(), port.c_str(), &hints, &found);
  if (status != 0) {
    throw ConnectionError("cannot resolve " + address.to_string() + ": " + gai_strerror(status));
  }
  std::string error = "no addresses";
  int fd = -1;
  for (const addrinfo* ai = found; ai != nullptr && fd < 0; ai = ai->ai_next) {
    fd = try_connect_tcp(ai, deadline, error);
  }
  ::freeaddrinfo(found);
  if (fd < 0) throw ConnectionError("cannot connect to " + address.to_string() + ": " + error);
  return fd;
}

template <typename T>
T& hold(Incoming& in) {
  if (!std::holds_alternative<T>(in)) in.template emplace<T>();
  return std::get<T>(in);
}

}  // namespace

HandshakeRefused::HandshakeRefused(std::string reason)
    : ConnectionError("learner refused the actor: " + reason), reason_(std::move(reason)) {}

Redirected::Redirected(std::string address, const std::string& reason)
    : ConnectionError("sent to " + address + ": " + reason), address_(std::move(address)) {}

Client Client::connect(const Address& address, std::chrono::milliseconds timeout,
                       const ClientOptions& options) {
  const auto deadline = Clock::now() + timeout;
  const int fd = address.kind == Address::Kind::kUnix ? connect_unix(address)
                                                      : connect_tcp(address, deadline);
  return Client(fd, options);
}

Client Client::connect(std::string_view address, std::chrono::milliseconds timeout,
                       const ClientOptions& options) {
  return connect(require_address(address), timeout, options);
}

Client::Client(int fd, const ClientOptions& options)
    : fd_(fd), limits_(options.limits), reader_(options.limits) {}

Client::Client(Client&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      ended_(other.ended_.load()),
      limits_(other.limits_),
      out_(std::move(other.out_)),
      reader_(std::move(other.reader_)),
      incoming_(std::move(other.incoming_)),
      closed_reason_(std::move(other.closed_reason_)) {}

Client& Client::operator=(Client&& other) noexcept {
  if (this != &other) {
    close();
    fd_ = std::exchange(other.fd_, -1);
    ended_ = other.ended_.load();
    limits_ = other.limits_;
    out_ = std::move(other.out_);
    reader_ = std::move(other.reader_);
    incoming_ = std::move(other.incoming_);
    closed_reason_ = std::move(other.closed_reason_);
  }
  return *this;
}

Client::~Client() { close(); }

Welcome Client::hello(const Hello& hello, std::chrono::milliseconds timeout) {
  encode(hello, out_);
  write_frame();
  switch (next_message(timeout)) {
    case Got::kTimeout:
      throw ConnectionError("no Welcome from the learner within " +
                            std::to_string(timeout.count()) + " ms");
    case Got::kClosed:
      throw ConnectionError("connection ended during the handshake: " + closed_reason_);
    case Got::kMessage: break;
  }
  if (auto* welcome = std::get_if<Welcome>(&incoming_)) return std::move(*welcome);
  if (auto* bye = std::get_if<Bye>(&incoming_)) {
    // A Bye that asks to reconnect (the learner is busy) is no refusal: try again later.
    if (bye->reconnect && !bye->redirect.empty()) throw Redirected(bye->redirect, bye->reason);
    if (bye->reconnect) throw ConnectionError("learner asks to try again: " + bye->reason);
    throw HandshakeRefused(bye->reason);
  }
  const std::string got = message_name(incoming_);
  end("expected Welcome, got " + got);
  throw ConnectionError("expected Welcome from the learner, got " + got);
}

void Client::send(const StepBatch& batch) {
  encode(batch, out_);
  write_frame();
}

void Client::send(const ActorNotice& notice) {
  encode(notice, out_);
  write_frame();
}

Incoming Client::receive(std::chrono::milliseconds timeout) {
  Incoming in;
  receive_into(in, timeout);
  return in;
}

void Client::receive_into(Incoming& into, std::chrono::milliseconds timeout) {
  switch (next_message(timeout)) {
    case Got::kTimeout: into.emplace<Timeout>(); return;
    case Got::kClosed: hold<Closed>(into).reason = closed_reason_; return;
    case Got::kMessage: break;
  }
  // Swapping rather than moving hands the caller's old buffers back to
  // incoming_, where the next decode reuses them.
  if (auto* actions = std::get_if<ActionBatch>(&incoming_)) {
    auto& out = hold<ActionBatch>(into);
    out.seq = actions->seq;
    out.actions.swap(actions->actions);
  } else if (auto* update = std::get_if<ConfigUpdate>(&incoming_)) {
    auto& out = hold<ConfigUpdate>(into);
    out.config_version = update->config_version;
    out.payload.swap(update->payload);
  } else if (auto* bye = std::get_if<Bye>(&incoming_)) {
    auto& out = hold<Bye>(into);
    out.reason.swap(bye->reason);
    out.reconnect = bye->reconnect;
  } else {
    end(std::string("unexpected ") + message_name(incoming_) + " from the learner");
    hold<Closed>(into).reason = closed_reason_;
  }
}

std::optional<Bye> Client::unread_bye() {
  for (;;) {
    if (next_message(std::chrono::milliseconds(0)) != Got::kMessage) return std::nullopt;
    if (auto* bye = std::get_if<Bye>(&incoming_)) return std::move(*bye);
  }
}

Client::Got Client::next_message(std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  bool first_wait = true;
  for (;;) {
    if (ended_) return Got::kClosed;
    FrameReader::Next next = reader_.next();
    if (next.status == FrameReader::Next::Status::kFrame) {
      DecodeError error;
      if (decode_into(next.data, next.size, limits_, incoming_, error)) return Got::kMessage;
      end("bad frame from the learner: " + error.reason);
      return Got::kClosed;
    }
    if (next.status == FrameReader::Next::Status::kInvalid) {
      end("bad frame from the learner: " + next.error);
      return Got::kClosed;
    }
    if (fd_ < 0) {
      end("connection is closed");
      return Got::kClosed;
    }
    // Wait in poll for POLLIN, then read without blocking. A thread blocked
    // in recv instead is also woken each time the learner reads what this
    // client sent (the socket's "room to write" event), runs, finds nothing
    // and sleeps again; poll ignores those events. On one CPU shared with the
    // learner that was ~0.3 us of a 4.5 us round trip (transport_bench).
    // The first wait takes the caller's timeout as it is: one clock read per
    // call in the common case.
    const auto left = first_wait ? std::chrono::nanoseconds(timeout)
                                 : std::chrono::nanoseconds(deadline - Clock::now());
    first_wait = false;
    if (left.count() > 0) {
      pollfd readable{fd_, POLLIN, 0};
      const timespec wait{static_cast<time_t>(left.count() / 1000000000),
                          static_cast<long>(left.count() % 1000000000)};
      const int ready = ::ppoll(&readable, 1, &wait, nullptr);
      if (ready < 0 && errno != EINTR) {
        end("waiting for the learner failed: " + errno_text(errno));
        return Got::kClosed;
      }
      if (ready <= 0) continue;  // the deadline (checked below next time) or a signal
    }
    const ssize_t got = ::recv(fd_, reader_.write_ptr(), reader_.writable(), MSG_DONTWAIT);
    if (got > 0) {
      reader_.commit(static_cast<size_t>(got));
    } else if (got == 0) {
      end("learner closed the connection");
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      if (Clock::now() >= deadline) return Got::kTimeout;
    } else if (errno != EINTR) {
      end("receive failed: " + errno_text(errno));
    }
  }
}

void Client::write_frame() {
  if (fd_ < 0) throw ConnectionError("send on a closed client");
  const uint8_t* at = out_.data();
  size_t left = out_.size();
  while (left > 0) {
    const ssize_t sent = ::send(fd_, at, left, MSG_NOSIGNAL);
    if (sent < 0) {
      if (errno == EINTR) continue;
      throw ConnectionError("send to the learner failed: " + errno_text(errno));
    }
    at += sent;
    left -= static_cast<size_t>(sent);
  }
}

void Client::end(const std::string& reason) {
  if (ended_) return;
  closed_reason_ = reason;
  ended_ = true;
  // Shut down, not closed: a concurrent send() must not see the descriptor reused.
  if (fd_ >= 0) ::shutdown(fd_, SHUT_RDWR);
}

void Client::close(const std::string& reason) {
  if (fd_ < 0) return;
  if (!ended_) {
    encode(Bye{reason, /*reconnect=*/false, /*redirect=*/""}, out_);
    // Best effort: the learner may be gone or its buffer full; never block here.
    [[maybe_unused]] ssize_t ignored =
        ::send(fd_, out_.data(), out_.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    ::shutdown(fd_, SHUT_RDWR);
  }
  ::close(fd_);
  fd_ = -1;
  ended_ = true;
  if (closed_reason_.empty()) closed_reason_ = "closed by the actor";
}

}  // namespace moonseed::rpc
