#include "rpc/control_socket.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <system_error>

#include "rpc/unix_socket.h"

namespace moonseed::rpc {

ControlServer::ControlServer(std::string path) : path_(std::move(path)) {
  listen_fd_ = listen_unix_private(path_);
}

ControlServer::~ControlServer() {
  for (Client& c : clients_) ::close(c.fd);
  if (listen_fd_ >= 0) {
    ::close(listen_fd_);
    ::unlink(path_.c_str());
  }
}

void ControlServer::add_poll_fds(std::vector<pollfd>& fds) const {
  fds.push_back(pollfd{listen_fd_, POLLIN, 0});
  for (const Client& c : clients_) {
    // A client whose replies pile up unread is not read from until they drain.
    const short in = reading(c) ? POLLIN : 0;
    fds.push_back(pollfd{c.fd, static_cast<short>(c.out.empty() ? in : in | POLLOUT), 0});
  }
}

void ControlServer::serve(const std::vector<pollfd>& fds, const Handler& handle) {
  for (const pollfd& p : fds) {
    if (p.revents == 0) continue;
    if (p.fd == listen_fd_) {
      while (true) {
        const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) break;  // EAGAIN, or a client that left before we accepted it
        if (clients_.size() >= kMaxControlClients) {
          const std::string busy = "{\"ok\": false, \"error\": \"" + std::to_string(kMaxControlClients) +
                                   " control clients are connected already; closing\"}\n";
          if (::send(fd, busy.data(), busy.size(), MSG_NOSIGNAL | MSG_DONTWAIT) < 0) {
            // It is closed either way.
          }
          ::close(fd);
          continue;
        }
        clients_.push_back(Client{fd, {}, {}, false});
      }
      continue;
    }
    for (Client& c : clients_) {
      if (c.fd != p.fd) continue;
      if (p.revents & (POLLIN | POLLHUP | POLLERR)) read_from(c, handle);
      if (c.fd >= 0 && !c.out.empty()) write_to(c);
      if (c.fd >= 0 && !c.closing) answer(c, handle);  // lines held back while replies waited
      break;
    }
  }
  for (size_t i = 0; i < clients_.size();) {
    Client& c = clients_[i];
    if (c.fd >= 0 && !(c.closing && c.out.empty())) {
      ++i;
      continue;
    }
    if (c.fd >= 0) ::close(c.fd);
    clients_.erase(clients_.begin() + static_cast<std::ptrdiff_t>(i));
  }
}

void ControlServer::read_from(Client& c, const Handler& handle) {
  char buf[4096];
  while (!c.closing && reading(c)) {
    const ssize_t n = ::recv(c.fd, buf, sizeof buf, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    if (n <= 0) {  // EOF or error: the client is gone, nothing to answer
      ::close(c.fd);
      c.fd = -1;
      return;
    }
    c.in.append(buf, static_cast<size_t>(n));
    answer(c, handle);
  }
}

void ControlServer::answer(Client& c, const Handler& handle) {
  size_t start = 0;
  for (size_t nl; reading(c) && (nl = c.in.find('\n', start)) != std::string::npos; start = nl + 1) {
    std::string line = c.in.substr(start, nl - start);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    c.out += handle(line) + "\n";
  }
  c.in.erase(0, start);
  if (c.in.size() > kMaxControlLine && c.in.find('\n') == std::string::npos) {
    c.out += "{\"ok\": false, \"error\": \"request line longer than 65536 bytes; closing\"}\n";
    c.closing = true;
  }
}

void ControlServer::write_to(Client& c) {
  while (!c.out.empty()) {
    const ssize_t n = ::send(c.fd, c.out.data(), c.out.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (n < 0) {  // the client left: drop what it did not read
      ::close(c.fd);
      c.fd = -1;
      return;
    }
    c.out.erase(0, static_cast<size_t>(n));
  }
}

ControlClient::ControlClient(const std::string& path) {
  fd_ = connect_unix(path);
  if (fd_ < 0) {
    const std::string why = std::strerror(errno);
    throw std::runtime_error("cannot connect to " + path + " (" + why +
                             "); is the run still going? A run opens it while it trains.");
  }
}

ControlClient::~ControlClient() {
  if (fd_ >= 0) ::close(fd_);
}

ControlClient::ControlClient(ControlClient&& other) noexcept : fd_(other.fd_), in_(std::move(other.in_)) {
  other.fd_ = -1;
}

std::string ControlClient::request(const std::string& line, std::chrono::milliseconds timeout) {
  if (line.find('\n') != std::string::npos) {
    throw std::invalid_argument("a control request is one line; got a newline in: " + line);
  }
  const std::string out = line + "\n";
  size_t sent = 0;
  while (sent < out.size()) {
    const ssize_t n = ::send(fd_, out.data() + sent, out.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw std::runtime_error(std::string("the run closed its control socket (") + std::strerror(errno) + ")");
    sent += static_cast<size_t>(n);
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    const size_t nl = in_.find('\n');
    if (nl != std::string::npos) {
      std::string reply = in_.substr(0, nl);
      in_.erase(0, nl + 1);
      return reply;
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) throw std::runtime_error("no reply from the run within " + std::to_string(timeout.count()) + " ms to: " + line);
    pollfd p{fd_, POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;
    char buf[4096];
    const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw std::runtime_error("the run closed its control socket before replying to: " + line);
    in_.append(buf, static_cast<size_t>(n));
  }
}

}  // namespace moonseed::rpc
