#include "dashboard/request_gate.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <utility>

namespace moonseed::dashboard {
namespace {

void close_connection(int fd) {
  ::shutdown(fd, SHUT_RDWR);
  ::close(fd);
}

// Best effort, without waiting: a socket that has sent little has room.
void say_and_close(int fd, const char* reply) {
  [[maybe_unused]] const ssize_t sent = ::send(fd, reply, std::strlen(reply), MSG_DONTWAIT | MSG_NOSIGNAL);
  close_connection(fd);
}

bool head_is_whole(const std::string& bytes) { return bytes.find("\r\n\r\n") != std::string::npos; }

}  // namespace

RequestGate::RequestGate(const Limits& limits, Ready ready) : limits_(limits), ready_(std::move(ready)) {
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake_fd_ < 0) throw std::runtime_error(std::string("dashboard: eventfd: ") + std::strerror(errno));
  thread_ = std::thread([this] { run(); });
}

RequestGate::~RequestGate() {
  stop();
  ::close(wake_fd_);
}

void RequestGate::add(int fd, std::string buffered, int served) {
  {
    base::MutexLock lock(mu_);
    if (!stopping_) {
      // Room first: while the gate's thread lags, the oldest not yet taken in goes.
      while (!incoming_.empty() && incoming_.size() + waiting_size_.load() >= limits_.max_pending) {
        close_connection(incoming_.front().fd);
        incoming_.pop_front();
        ++evicted_;
      }
      incoming_.push_back(Connection{fd, std::move(buffered), served, Clock::now() + limits_.deadline});
      const uint64_t one = 1;
      [[maybe_unused]] const ssize_t n = ::write(wake_fd_, &one, sizeof one);
      return;
    }
  }
  close_connection(fd);
}

void RequestGate::stop() {
  {
    base::MutexLock lock(mu_);
    if (stopping_) return;
    stopping_ = true;
    const uint64_t one = 1;
    [[maybe_unused]] const ssize_t n = ::write(wake_fd_, &one, sizeof one);
  }
  if (thread_.joinable()) thread_.join();
  for (Connection& c : waiting_) close_connection(c.fd);
  waiting_.clear();
  base::MutexLock lock(mu_);
  for (Connection& c : incoming_) close_connection(c.fd);
  incoming_.clear();
}

bool RequestGate::read_some(Connection& c) {
  char bytes[4096];
  while (c.buffered.size() < limits_.max_head_bytes) {
    const size_t want = std::min(sizeof bytes, limits_.max_head_bytes - c.buffered.size());
    const ssize_t n = ::recv(c.fd, bytes, want, MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    if (n <= 0) {  // the client left (or the connection failed) before a whole request
      close_connection(c.fd);
      return false;
    }
    c.buffered.append(bytes, static_cast<size_t>(n));
  }
  if (!head_is_whole(c.buffered) && c.buffered.size() < limits_.max_head_bytes) return true;
  ready_(std::move(c));
  return false;
}

void RequestGate::run() {
  std::vector<pollfd> polled;
  while (true) {
    uint64_t count = 0;  // drained before taking what it announces: no wake-up is lost
    [[maybe_unused]] const ssize_t drained = ::read(wake_fd_, &count, sizeof count);
    {
      base::MutexLock lock(mu_);
      if (stopping_) return;
      for (Connection& c : incoming_) waiting_.push_back(std::move(c));
      incoming_.clear();
      waiting_size_.store(waiting_.size());
    }
    // A kept-alive connection may bring its next request's head already.
    waiting_.erase(std::remove_if(waiting_.begin(), waiting_.end(),
                                  [&](Connection& c) {
                                    if (!head_is_whole(c.buffered)) return false;
                                    ready_(std::move(c));
                                    return true;
                                  }),
                   waiting_.end());
    if (waiting_.size() > limits_.max_pending) {
      const size_t over = waiting_.size() - limits_.max_pending;
      for (size_t i = 0; i < over; ++i) close_connection(waiting_[i].fd);
      waiting_.erase(waiting_.begin(), waiting_.begin() + static_cast<std::ptrdiff_t>(over));
      evicted_ += static_cast<int64_t>(over);
    }
    waiting_size_.store(waiting_.size());
    polled.assign(1, pollfd{wake_fd_, POLLIN, 0});
    Clock::time_point first = Clock::time_point::max();
    for (const Connection& c : waiting_) {
      polled.push_back(pollfd{c.fd, POLLIN, 0});
      first = std::min(first, c.deadline);
    }
    int timeout_ms = -1;
    if (!waiting_.empty()) {
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(first - Clock::now());
      timeout_ms = static_cast<int>(std::max<int64_t>(0, left.count()));
    }
    if (::poll(polled.data(), polled.size(), timeout_ms) < 0) {
      for (pollfd& p : polled) p.revents = 0;  // EINTR: only the deadlines are looked at
    }
    const Clock::time_point now = Clock::now();
    std::vector<Connection> still;
    still.reserve(waiting_.size());
    for (size_t i = 0; i < waiting_.size(); ++i) {
      Connection& c = waiting_[i];
      if ((polled[i + 1].revents & (POLLIN | POLLHUP | POLLERR)) != 0 && !read_some(c)) continue;
      if (now >= c.deadline) {
        ++timed_out_;
        if (c.buffered.empty()) {
          close_connection(c.fd);  // idle: nothing to answer
        } else {
          say_and_close(c.fd,
                        "HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Type: text/plain\r\n"
                        "Content-Length: 51\r\n\r\n408 request timeout: send the whole request faster\n");
        }
        continue;
      }
      still.push_back(std::move(c));
    }
    waiting_ = std::move(still);
    waiting_size_.store(waiting_.size());
  }
}

}  // namespace moonseed::dashboard
