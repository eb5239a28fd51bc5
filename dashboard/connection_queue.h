// The dashboard server's connection queue (dashboard/server.h): httplib's
// TaskQueue with a bound on the connections it holds.
//
// Each task httplib hands it serves one accepted connection and closes its
// socket; only the task knows that socket, and cpp-httplib 0.11's enqueue()
// cannot say "refused" (it returns void), so every task must run: dropped, its
// socket would stay open for good. `threads` workers take tasks from at most
// `max_waiting` waiting ones; when those are full, enqueue() runs the task on
// the calling thread, httplib's accepting thread, which accepts nothing more
// until that connection is done (within the server's read or keep-alive
// timeout for one that sends nothing). Later connections wait in the kernel's
// listen backlog, holding no descriptor or memory of this process. So the
// server holds at most threads + max_waiting + 1 connections.
//
// Thread-safety: enqueue() from httplib's accepting thread; shutdown() once,
// from that thread or the owner's, after which nothing is enqueued.
#pragma once

#include <cstddef>
#include <deque>
#include <functional>
#include <thread>
#include <vector>

#include <httplib.h>

#include "base/mutex.h"

namespace moonseed::dashboard {

class ConnectionQueue final : public httplib::TaskQueue {
 public:
  ConnectionQueue(int threads, size_t max_waiting);
  ~ConnectionQueue() override;  // shutdown()
  ConnectionQueue(const ConnectionQueue&) = delete;
  ConnectionQueue& operator=(const ConnectionQueue&) = delete;

  void enqueue(std::function<void()> task) override;
  // The tasks waiting still run (each closes its socket), then the workers end.
  void shutdown() override;

 private:
  void work();

  const size_t max_waiting_;
  base::Mutex mu_;
  base::CondVar ready_;
  std::deque<std::function<void()>> waiting_ GUARDED_BY(mu_);
  bool stopping_ GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace moonseed::dashboard
