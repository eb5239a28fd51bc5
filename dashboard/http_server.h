// The dashboard server's transport, internal to dashboard/ (server.cc and
// routes.cc): how the bytes of a request reach httplib. The accepting thread
// hands each connection to the RequestGate; once a request's head is whole, a
// worker answers it through a GateStream, which reads what the gate buffered
// and then the socket, only until the request's deadline.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <httplib.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>
#include <utility>

#include "dashboard/request_gate.h"
#include "dashboard/server.h"

namespace moonseed::dashboard {

// httplib reads a request through this: first the bytes the gate read
// (RequestGate), then the socket, only until the request's deadline; each
// write waits at most Server::kReadTimeoutS for room.
class GateStream final : public httplib::Stream {
 public:
  GateStream(int fd, std::string buffered, RequestGate::Clock::time_point read_deadline)
      : fd_(fd), buffered_(std::move(buffered)), read_deadline_(read_deadline) {}

  bool is_readable() const override { return at_ < buffered_.size() || wait(POLLIN, read_deadline_); }
  bool is_writable() const override { return wait(POLLOUT, write_deadline()); }
  ssize_t read(char* ptr, size_t size) override {
    if (at_ < buffered_.size()) {
      const size_t n = std::min(size, buffered_.size() - at_);
      std::memcpy(ptr, buffered_.data() + at_, n);
      at_ += n;
      return static_cast<ssize_t>(n);
    }
    if (!wait(POLLIN, read_deadline_)) return -1;
    ssize_t n;
    do n = ::recv(fd_, ptr, size, MSG_DONTWAIT);
    while (n < 0 && errno == EINTR);
    return n;
  }
  ssize_t write(const char* ptr, size_t size) override {
    if (!wait(POLLOUT, write_deadline())) return -1;
    ssize_t n;
    do n = ::send(fd_, ptr, size, MSG_DONTWAIT | MSG_NOSIGNAL);
    while (n < 0 && errno == EINTR);
    return n;
  }
  void get_remote_ip_and_port(std::string& ip, int& port) const override { address_of(::getpeername, ip, port); }
  void get_local_ip_and_port(std::string& ip, int& port) const override { address_of(::getsockname, ip, port); }
  int socket() const override { return fd_; }
  // Bytes the gate read past this request (a client that sent the next one already).
  std::string unread() const { return buffered_.substr(at_); }

 private:
  static RequestGate::Clock::time_point write_deadline() {
    return RequestGate::Clock::now() + std::chrono::seconds(Server::kReadTimeoutS);
  }
  bool wait(short events, RequestGate::Clock::time_point deadline) const {
    while (true) {
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - RequestGate::Clock::now());
      pollfd p{fd_, events, 0};
      const int n = ::poll(&p, 1, static_cast<int>(std::max<int64_t>(0, left.count())));
      if (n > 0) return true;
      if (n == 0 || errno != EINTR) return false;
    }
  }
  void address_of(int (*name)(int, sockaddr*, socklen_t*), std::string& ip, int& port) const {
    sockaddr_storage address{};
    socklen_t length = sizeof address;
    ip.clear();
    port = 0;
    if (name(fd_, reinterpret_cast<sockaddr*>(&address), &length) != 0) return;
    char text[INET6_ADDRSTRLEN] = {};
    if (address.ss_family == AF_INET) {
      const auto* v4 = reinterpret_cast<const sockaddr_in*>(&address);
      ::inet_ntop(AF_INET, &v4->sin_addr, text, sizeof text);
      port = ntohs(v4->sin_port);
    } else if (address.ss_family == AF_INET6) {
      const auto* v6 = reinterpret_cast<const sockaddr_in6*>(&address);
      ::inet_ntop(AF_INET6, &v6->sin6_addr, text, sizeof text);
      port = ntohs(v6->sin6_port);
    }
    ip = text;
  }

  const int fd_;
  const std::string buffered_;
  size_t at_ = 0;
  const RequestGate::Clock::time_point read_deadline_;
};

// httplib's server, fed by the gate: an accepted connection goes to the gate
// (not to a thread of httplib's), and serve_one() answers one request.
class HttpServer final : public httplib::Server {
 public:
  RequestGate* gate = nullptr;  // set before listening

  // httplib 0.11 listens with a backlog of 5: a burst of connections (slow
  // ones among them) would make a real one's SYN wait for retransmission, for
  // seconds. Linux takes a second listen() as a new backlog.
  void widen_backlog(int backlog) { ::listen(svr_sock_, backlog); }

  // One request from `stream`; false when the connection must close.
  bool serve_one(GateStream& stream, bool last, bool& connection_closed) {
    return process_request(stream, last, connection_closed, nullptr);
  }

 private:
  bool process_and_close_socket(int sock) override {
    gate->add(sock);
    return true;
  }
};

}  // namespace moonseed::dashboard
