#include "dashboard/connection_queue.h"

#include <utility>

namespace moonseed::dashboard {

ConnectionQueue::ConnectionQueue(int threads, size_t max_waiting) : max_waiting_(max_waiting) {
  for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { work(); });
}

ConnectionQueue::~ConnectionQueue() { shutdown(); }

bool ConnectionQueue::try_enqueue(std::function<void()>& task) {
  base::MutexLock lock(mu_);
  if (stopping_ || waiting_.size() >= max_waiting_) return false;
  waiting_.push_back(std::move(task));
  ready_.notify_one();
  return true;
}

void ConnectionQueue::shutdown() {
  {
    base::MutexLock lock(mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  ready_.notify_all();
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
}

void ConnectionQueue::work() {
  while (true) {
    std::function<void()> task;
    {
      base::MutexLock lock(mu_);
      ready_.wait(lock, [&]() REQUIRES(mu_) { return stopping_ || !waiting_.empty(); });
      if (waiting_.empty()) return;
      task = std::move(waiting_.front());
      waiting_.pop_front();
    }
    task();
  }
}

}  // namespace moonseed::dashboard
