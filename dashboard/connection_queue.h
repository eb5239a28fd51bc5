// The dashboard server's workers (dashboard/server.h): `threads` threads that
// serve requests whose head has arrived (RequestGate), from at most
// `max_waiting` waiting ones.
//
// Each task serves one request of a connection and passes its socket on (back
// to the gate, or closed): every task taken must run, so shutdown() runs
// those still waiting. try_enqueue() refuses a task when `max_waiting` wait
// already; the caller then answers the request itself (503) and closes it, so
// the thread handing requests over never serves one.
//
// Thread-safety: try_enqueue() from any thread; shutdown() once, from the owner,
// after which nothing is enqueued.
#pragma once

#include <cstddef>
#include <deque>
#include <functional>
#include <thread>
#include <vector>

#include "base/mutex.h"

namespace moonseed::dashboard {

class ConnectionQueue final {
 public:
  ConnectionQueue(int threads, size_t max_waiting);
  ~ConnectionQueue();  // shutdown()
  ConnectionQueue(const ConnectionQueue&) = delete;
  ConnectionQueue& operator=(const ConnectionQueue&) = delete;

  // False (and `task` untouched) when max_waiting tasks wait, or after shutdown().
  bool try_enqueue(std::function<void()>& task) EXCLUDES(mu_);
  // The tasks waiting still run (each passes its socket on), then the workers end.
  void shutdown() EXCLUDES(mu_);

 private:
  void work() EXCLUDES(mu_);

  const size_t max_waiting_;
  base::Mutex mu_;
  base::CondVar ready_;
  std::deque<std::function<void()>> waiting_ GUARDED_BY(mu_);
  bool stopping_ GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace moonseed::dashboard
