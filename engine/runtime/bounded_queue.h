// BoundedQueue<T>: a FIFO of fixed capacity between threads. The learner uses
// one for completed unrolls (inference thread -> prefetch thread; a full queue
// blocks the inference thread, which holds the actors back) and one, two deep,
// for collated batches (prefetch thread -> training thread).
//
// Ownership: the queue owns the items it holds; push moves an item in, pop
//   moves it out. Storage is allocated once, at construction.
// Failure: closing is an expected outcome, returned as a value: push into a
//   closed queue returns false (the item is dropped), pop on a closed and
//   drained queue returns an empty optional. A zero capacity is a caller bug
//   (std::invalid_argument).
// Thread-safety: every member is safe to call from any thread, with any number
//   of producers and consumers.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "base/mutex.h"

namespace moonseed::engine {

template <typename T>
class BoundedQueue {
 public:
  explicit BoundedQueue(size_t capacity) : capacity_(capacity), slots_(capacity) {
    if (capacity == 0) {
      throw std::invalid_argument("BoundedQueue: capacity must be >= 1, got 0");
    }
  }

  BoundedQueue(const BoundedQueue&) = delete;
  BoundedQueue& operator=(const BoundedQueue&) = delete;

  // Blocks while the queue is full and open. Returns false, dropping `item`,
  // when the queue is (or becomes) closed.
  bool push(T item) EXCLUDES(mu_) {
    base::MutexLock lock(mu_);
    ++waiting_producers_;
    not_full_.wait(lock, [&]() REQUIRES(mu_) { return closed_ || count_ < capacity_; });
    --waiting_producers_;
    if (closed_) return false;
    slots_[(head_ + count_) % capacity_].emplace(std::move(item));
    ++count_;
    lock.unlock();
    not_empty_.notify_one();
    return true;
  }

  // Never blocks: false, leaving `item` with the caller, when the queue is
  // full or closed.
  bool try_push(T& item) EXCLUDES(mu_) {
    base::MutexLock lock(mu_);
    if (closed_ || count_ == capacity_) return false;
    slots_[(head_ + count_) % capacity_].emplace(std::move(item));
    ++count_;
    lock.unlock();
    not_empty_.notify_one();
    return true;
  }

  // Blocks while the queue is empty and open. After close() it still returns
  // the remaining items, then an empty optional.
  std::optional<T> pop() EXCLUDES(mu_) {
    base::MutexLock lock(mu_);
    ++waiting_consumers_;
    not_empty_.wait(lock, [&]() REQUIRES(mu_) { return closed_ || count_ > 0; });
    --waiting_consumers_;
    std::optional<T> item = take_front();
    lock.unlock();
    if (item) not_full_.notify_one();
    return item;
  }

  // Returns the front item if there is one, without blocking.
  std::optional<T> try_pop() EXCLUDES(mu_) {
    base::MutexLock lock(mu_);
    std::optional<T> item = take_front();
    lock.unlock();
    if (item) not_full_.notify_one();
    return item;
  }

  // Like pop(), but gives up (empty optional) after `timeout` of real time.
  template <typename Rep, typename Period>
  std::optional<T> pop_for(std::chrono::duration<Rep, Period> timeout) EXCLUDES(mu_) {
    base::MutexLock lock(mu_);
    ++waiting_consumers_;
    not_empty_.wait_for(lock, timeout, [&]() REQUIRES(mu_) { return closed_ || count_ > 0; });
    --waiting_consumers_;
    std::optional<T> item = take_front();
    lock.unlock();
    if (item) not_full_.notify_one();
    return item;
  }

  // Wakes every blocked push and pop. Idempotent.
  void close() EXCLUDES(mu_) {
    {
      base::MutexLock guard(mu_);
      closed_ = true;
    }
    not_full_.notify_all();
    not_empty_.notify_all();
  }

  bool closed() const EXCLUDES(mu_) {
    base::MutexLock guard(mu_);
    return closed_;
  }

  size_t size() const EXCLUDES(mu_) {
    base::MutexLock guard(mu_);
    return count_;
  }

  size_t capacity() const { return capacity_; }

  // Threads blocked in push() because the queue is full: non-zero means the
  // consumer is the bottleneck (backpressure is on).
  int waiting_producers() const EXCLUDES(mu_) {
    base::MutexLock guard(mu_);
    return waiting_producers_;
  }

  // Threads blocked in pop()/pop_for() because the queue is empty.
  int waiting_consumers() const EXCLUDES(mu_) {
    base::MutexLock guard(mu_);
    return waiting_consumers_;
  }

 private:
  // The caller notifies not_full_ after letting mu_ go (when this returned an
  // item), so a woken producer does not block on mu_ at once.
  std::optional<T> take_front() REQUIRES(mu_) {
    if (count_ == 0) return std::nullopt;
    std::optional<T> item(std::in_place, std::move(*slots_[head_]));
    slots_[head_].reset();
    head_ = (head_ + 1) % capacity_;
    --count_;
    return item;
  }

  mutable base::Mutex mu_;
  base::CondVar not_full_;   // signalled on pop and close
  base::CondVar not_empty_;  // signalled on push and close
  const size_t capacity_;  // slots_.size(), readable without mu_
  // Ring of capacity_ items starting at head_; slots outside it are empty.
  std::vector<std::optional<T>> slots_ GUARDED_BY(mu_);
  size_t head_ GUARDED_BY(mu_) = 0;
  size_t count_ GUARDED_BY(mu_) = 0;
  bool closed_ GUARDED_BY(mu_) = false;
  int waiting_producers_ GUARDED_BY(mu_) = 0;
  int waiting_consumers_ GUARDED_BY(mu_) = 0;
};

}  // namespace moonseed::engine
