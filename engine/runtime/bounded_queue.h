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
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace moonseed::engine {

template <typename T>
class BoundedQueue {
 public:
  explicit BoundedQueue(size_t capacity) : slots_(capacity) {
    if (capacity == 0) {
      throw std::invalid_argument("BoundedQueue: capacity must be >= 1, got 0");
    }
  }

  BoundedQueue(const BoundedQueue&) = delete;
  BoundedQueue& operator=(const BoundedQueue&) = delete;

  // Blocks while the queue is full and open. Returns false, dropping `item`,
  // when the queue is (or becomes) closed.
  bool push(T item) {
    std::unique_lock<std::mutex> lock(mu_);
    ++waiting_producers_;
    not_full_.wait(lock, [&] { return closed_ || count_ < slots_.size(); });
    --waiting_producers_;
    if (closed_) return false;
    slots_[(head_ + count_) % slots_.size()].emplace(std::move(item));
    ++count_;
    lock.unlock();
    not_empty_.notify_one();
    return true;
  }

  // Never blocks: false, leaving `item` with the caller, when the queue is
  // full or closed.
  bool try_push(T& item) {
    std::unique_lock<std::mutex> lock(mu_);
    if (closed_ || count_ == slots_.size()) return false;
    slots_[(head_ + count_) % slots_.size()].emplace(std::move(item));
    ++count_;
    lock.unlock();
    not_empty_.notify_one();
    return true;
  }

  // Blocks while the queue is empty and open. After close() it still returns
  // the remaining items, then an empty optional.
  std::optional<T> pop() {
    std::unique_lock<std::mutex> lock(mu_);
    ++waiting_consumers_;
    not_empty_.wait(lock, [&] { return closed_ || count_ > 0; });
    --waiting_consumers_;
    return take_front(lock);
  }

  // Returns the front item if there is one, without blocking.
  std::optional<T> try_pop() {
    std::unique_lock<std::mutex> lock(mu_);
    return take_front(lock);
  }

  // Like pop(), but gives up (empty optional) after `timeout` of real time.
  template <typename Rep, typename Period>
  std::optional<T> pop_for(std::chrono::duration<Rep, Period> timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    ++waiting_consumers_;
    not_empty_.wait_for(lock, timeout, [&] { return closed_ || count_ > 0; });
    --waiting_consumers_;
    return take_front(lock);
  }

  // Wakes every blocked push and pop. Idempotent.
  void close() {
    {
      std::lock_guard<std::mutex> guard(mu_);
      closed_ = true;
    }
    not_full_.notify_all();
    not_empty_.notify_all();
  }

  bool closed() const {
    std::lock_guard<std::mutex> guard(mu_);
    return closed_;
  }

  size_t size() const {
    std::lock_guard<std::mutex> guard(mu_);
    return count_;
  }

  size_t capacity() const { return slots_.size(); }

  // Threads blocked in push() because the queue is full: non-zero means the
  // consumer is the bottleneck (backpressure is on).
  int waiting_producers() const {
    std::lock_guard<std::mutex> guard(mu_);
    return waiting_producers_;
  }

  // Threads blocked in pop()/pop_for() because the queue is empty.
  int waiting_consumers() const {
    std::lock_guard<std::mutex> guard(mu_);
    return waiting_consumers_;
  }

 private:
  std::optional<T> take_front(std::unique_lock<std::mutex>& lock) {
    if (count_ == 0) return std::nullopt;
    std::optional<T> item(std::in_place, std::move(*slots_[head_]));
    slots_[head_].reset();
    head_ = (head_ + 1) % slots_.size();
    --count_;
    lock.unlock();
    not_full_.notify_one();
    return item;
  }

  mutable std::mutex mu_;
  std::condition_variable not_full_;   // signalled on pop and close
  std::condition_variable not_empty_;  // signalled on push and close
  // Ring of slots_.size() items starting at head_; slots outside it are empty.
  std::vector<std::optional<T>> slots_;  // guarded by mu_ (the size is fixed)
  size_t head_ = 0;                      // guarded by mu_
  size_t count_ = 0;                     // guarded by mu_
  bool closed_ = false;                  // guarded by mu_
  int waiting_producers_ = 0;            // guarded by mu_
  int waiting_consumers_ = 0;            // guarded by mu_
};

}  // namespace moonseed::engine
