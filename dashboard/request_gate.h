// The dashboard server's front door against slow clients (dashboard/server.h).
//
// A connection reaches a worker thread only once the head of its next request
// (request line and headers, up to the blank line) has arrived, or
// `max_head_bytes` of it have (too long a head: the worker answers 400 or 414
// from those bytes). One thread of the gate waits for every connection at once
// (poll), reading what each sends into a buffer of its own, so clients that
// send their headers slowly (slowloris) hold a descriptor and a few bytes each,
// never a worker. Each connection has a deadline, `deadline` after it was
// accepted or after its previous request was answered (keep-alive): a request
// whose head is not whole by then gets "408 Request Timeout" and the
// connection is closed; an idle one is closed without a word. The worker
// serving a request reads whatever else it needs (a body) only until that same
// deadline (Connection::deadline), so no client holds a worker waiting for its
// bytes beyond it.
//
// At most `max_pending` connections wait here: beyond that, the one accepted
// longest ago is closed, so a flood of slow connections cannot keep a real
// request (whose head comes in one packet) out; its descriptors stay bounded.
//
// Thread-safety: add() and the counters from any thread; `ready` runs on the
// gate's thread, which must not block in it. stop() once, from the owner.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "base/mutex.h"

namespace moonseed::dashboard {

class RequestGate {
 public:
  using Clock = std::chrono::steady_clock;

  struct Limits {
    std::chrono::milliseconds deadline{3000};
    size_t max_head_bytes = 16 << 10;
    size_t max_pending = 256;
  };

  // A connection whose next request's head is in `buffered` (with any bytes
  // after it); it owns `fd`.
  struct Connection {
    int fd = -1;
    std::string buffered;
    int served = 0;  // requests answered on it before this one
    Clock::time_point deadline;
  };
  using Ready = std::function<void(Connection&&)>;

  RequestGate(const Limits& limits, Ready ready);
  ~RequestGate();  // stop()
  RequestGate(const RequestGate&) = delete;
  RequestGate& operator=(const RequestGate&) = delete;

  // Takes `fd` (accepted, or kept alive after `served` requests, with bytes
  // already read past the last request in `buffered`). After stop(): closes it.
  void add(int fd, std::string buffered = "", int served = 0);
  // Closes every connection still waiting; add() closes what comes later.
  void stop();

  int64_t timed_out() const { return timed_out_.load(); }  // closed at their deadline
  int64_t evicted() const { return evicted_.load(); }      // closed to make room

 private:
  void run();
  // Reads what `c` has sent; false when it is done with (handed on or closed).
  bool read_some(Connection& c);

  const Limits limits_;
  const Ready ready_;
  int wake_fd_ = -1;  // an eventfd: add() and stop() wake the gate's poll
  base::Mutex mu_;
  std::deque<Connection> incoming_ GUARDED_BY(mu_);
  bool stopping_ GUARDED_BY(mu_) = false;
  std::atomic<int64_t> timed_out_{0}, evicted_{0};
  std::vector<Connection> waiting_;  // the gate's thread only; oldest first
  // waiting_.size() as the gate's thread last left it: add() keeps incoming_
  // and waiting_ together within max_pending (+1), however far behind the
  // gate's thread is on a loaded machine.
  std::atomic<size_t> waiting_size_{0};
  std::thread thread_;
};

}  // namespace moonseed::dashboard
