// InferenceBatcher<Request>: gathers inference requests from the io threads
// into batches for the one inference thread.
//
// A request carries `envs` environments (one StepBatch of a group, say). The
// inference thread calls next_batch(), which waits for the first request, then
// keeps taking requests in arrival order until either
//   - the batch holds max_batch envs, or the next request would push it past
//     max_batch (requests are never split; a request larger than max_batch
//     runs alone), or
//   - the oldest request in the batch has waited `deadline` since submit(),
// whichever comes first. It never waits for a fixed batch size: with few
// actors a lone request runs after `deadline`.
//
// Ownership: the batcher owns pending requests; next_batch() moves them into
//   the caller's vector. The clock is borrowed and must outlive the batcher.
// Failure: close() is the expected end: submit() then returns false (the
//   request stays with the caller) and next_batch() returns the remaining
//   requests without waiting for deadlines, then false. A non-positive env
//   count is a caller bug (std::invalid_argument).
// Thread-safety: submit(), close() and stats() from any thread; next_batch()
//   from one consumer thread at a time.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "base/mutex.h"
#include "engine/runtime/clock.h"

namespace moonseed::engine {

struct BatcherStats {
  int64_t batches = 0;
  int64_t requests = 0;
  int64_t envs = 0;
  int64_t full_batches = 0;      // closed at max_batch (or the next request did not fit)
  int64_t deadline_batches = 0;  // closed because the oldest request reached the deadline
  int64_t drained_batches = 0;   // handed out after close()
};

template <typename Request>
class InferenceBatcher {
 public:
  // `idle_spin`: how long next_batch polls for a first request before it
  // sleeps. Waking a sleeping thread costs microseconds per round trip; a
  // short poll hides that when requests arrive back to back. Real time, not
  // `clock` (0 disables it, as tests with a manual clock want).
  InferenceBatcher(int max_batch, Clock::duration deadline, Clock& clock,
                   std::chrono::nanoseconds idle_spin = std::chrono::nanoseconds(0))
      : max_batch_(max_batch), deadline_(deadline), idle_spin_(idle_spin), clock_(clock) {
    if (max_batch < 1 || deadline.count() < 0) {
      throw std::invalid_argument("InferenceBatcher: need max_batch >= 1 and deadline >= 0, got " +
                                  std::to_string(max_batch) + " and " +
                                  std::to_string(deadline.count()) + " ns");
    }
    ring_.resize(static_cast<size_t>(max_batch) * 2);
  }

  InferenceBatcher(const InferenceBatcher&) = delete;
  InferenceBatcher& operator=(const InferenceBatcher&) = delete;

  // Queues a request of `envs` environments, stamped with the clock's now().
  // Returns false, leaving `request` untouched, once the batcher is closed.
  bool submit(Request&& request, int envs) EXCLUDES(mu_) {
    if (envs < 1) {
      throw std::invalid_argument("InferenceBatcher::submit: envs must be >= 1, got " +
                                  std::to_string(envs));
    }
    {
      base::MutexLock guard(mu_);
      if (closed_) return false;
      if (count_ == ring_.size()) grow();
      Pending& p = ring_[(head_ + count_) % ring_.size()];
      p.request.emplace(std::move(request));
      p.envs = envs;
      p.submitted = clock_.now();
      ++count_;
      ++submitted_;
      queued_hint_.store(count_, std::memory_order_release);
    }
    arrived_.notify_one();
    return true;
  }

  // Blocks until a batch is ready (see the top of this file) and moves its
  // requests into `out` (cleared first), oldest first. Returns false, with
  // `out` empty, once the batcher is closed and drained.
  bool next_batch(std::vector<Request>& out) EXCLUDES(mu_) {
    out.clear();
    if (idle_spin_.count() > 0 && queued_hint_.load(std::memory_order_acquire) == 0) {
      const auto until = std::chrono::steady_clock::now() + idle_spin_;
      while (queued_hint_.load(std::memory_order_acquire) == 0 &&
             std::chrono::steady_clock::now() < until) {
      }
    }
    base::MutexLock lock(mu_);
    if (pump_) {
      while (!closed_ && count_ == 0) {
        lock.unlock();
        pump_for(kIdlePump);
        lock.lock();
      }
    } else {
      arrived_.wait(lock, [&]() REQUIRES(mu_) { return closed_ || count_ > 0; });
    }
    if (count_ == 0) return false;
    while (true) {
      const size_t fit = requests_that_fit();
      // A batch that cannot grow runs now; so does everything after close().
      if (cannot_grow(fit)) return take(fit, out, &BatcherStats::full_batches);
      if (closed_) return take(fit, out, &BatcherStats::drained_batches);
      const Clock::time_point deadline = ring_[head_].submitted + deadline_;
      const Clock::time_point now = clock_.now();
      if (now >= deadline) return take(fit, out, &BatcherStats::deadline_batches);
      if (pump_) {
        lock.unlock();
        pump_for(deadline - now);
        lock.lock();
      } else {
        const uint64_t seen = submitted_;
        clock_.wait_until(lock, arrived_, deadline,
                          [&]() REQUIRES(mu_) { return closed_ || submitted_ != seen; });
      }
    }
  }

  // Run-to-completion: instead of sleeping until a request arrives, the
  // thread calling next_batch runs `pump`, which does the io work that
  // submits requests (e.g. rpc::Server::run_for) for at most the given time.
  // `wake` makes a waiting pump return (close() calls it). Set before the
  // first next_batch; requests may then also be submitted from inside pump.
  using Pump = std::function<void(std::chrono::nanoseconds max_wait)>;
  void set_pump(Pump pump, std::function<void()> wake) EXCLUDES(mu_) {
    base::MutexLock guard(mu_);
    pump_ = std::move(pump);
    wake_ = std::move(wake);
  }

  // Like next_batch() but never blocks: returns false when no batch is ready
  // yet (or the batcher is closed and drained).
  bool try_next_batch(std::vector<Request>& out) EXCLUDES(mu_) {
    out.clear();
    base::MutexLock lock(mu_);
    if (count_ == 0) return false;
    const size_t fit = requests_that_fit();
    if (cannot_grow(fit)) return take(fit, out, &BatcherStats::full_batches);
    if (closed_) return take(fit, out, &BatcherStats::drained_batches);
    if (clock_.now() >= ring_[head_].submitted + deadline_) {
      return take(fit, out, &BatcherStats::deadline_batches);
    }
    return false;
  }

  // Refuses further requests and wakes next_batch(). Idempotent.
  void close() EXCLUDES(mu_) {
    std::function<void()> wake;
    {
      base::MutexLock guard(mu_);
      closed_ = true;
      wake = wake_;
    }
    arrived_.notify_all();
    if (wake) wake();
  }

  // Requests waiting for a batch.
  size_t pending() const EXCLUDES(mu_) {
    base::MutexLock guard(mu_);
    return count_;
  }

  BatcherStats stats() const EXCLUDES(mu_) {
    base::MutexLock guard(mu_);
    return stats_;
  }

  int max_batch() const { return max_batch_; }
  Clock::duration deadline() const { return deadline_; }

 private:
  struct Pending {
    std::optional<Request> request;  // empty outside the live part of the ring
    int envs = 0;
    Clock::time_point submitted;
  };

  // How many requests from the front make the next batch: as many as fit in
  // max_batch envs, and at least one.
  // Longest a pump waits with nothing queued before close() is looked at again
  // (close() also wakes it).
  static constexpr std::chrono::milliseconds kIdlePump{100};

  // Called without mu_: the pump submits requests, which takes mu_.
  void pump_for(Clock::duration max_wait) EXCLUDES(mu_) {
    pump_(std::chrono::duration_cast<std::chrono::nanoseconds>(max_wait));
  }

  size_t requests_that_fit() const REQUIRES(mu_) {
    size_t n = 1;
    int envs = ring_[head_].envs;
    while (n < count_) {
      const int next = ring_[(head_ + n) % ring_.size()].envs;
      if (envs + next > max_batch_) break;
      envs += next;
      ++n;
    }
    return n;
  }

  // True when the first `n` pending requests form a batch that no later
  // request could join: a request is already waiting that does not fit, or
  // the batch has reached (or alone exceeds) max_batch envs.
  bool cannot_grow(size_t n) const REQUIRES(mu_) {
    if (n < count_) return true;
    int envs = 0;
    for (size_t i = 0; i < n; ++i) envs += ring_[(head_ + i) % ring_.size()].envs;
    return envs >= max_batch_;
  }

  bool take(size_t n, std::vector<Request>& out, int64_t BatcherStats::*reason) REQUIRES(mu_) {
    for (size_t i = 0; i < n; ++i) {
      Pending& p = ring_[head_];
      out.push_back(std::move(*p.request));
      p.request.reset();
      stats_.envs += p.envs;
      head_ = (head_ + 1) % ring_.size();
    }
    count_ -= n;
    queued_hint_.store(count_, std::memory_order_release);
    stats_.requests += static_cast<int64_t>(n);
    stats_.batches += 1;
    stats_.*reason += 1;
    return true;
  }

  // Doubles the ring, keeping order. Rare: pending requests are bounded by the
  // number of env groups with a request in flight.
  void grow() REQUIRES(mu_) {
    std::vector<Pending> bigger(ring_.size() * 2);
    for (size_t i = 0; i < count_; ++i) bigger[i] = std::move(ring_[(head_ + i) % ring_.size()]);
    ring_ = std::move(bigger);
    head_ = 0;
  }

  const int max_batch_;
  const Clock::duration deadline_;
  const std::chrono::nanoseconds idle_spin_;
  Clock& clock_;
  std::atomic<size_t> queued_hint_{0};  // count_, readable without mu_ (for the idle spin)

  mutable base::Mutex mu_;
  base::CondVar arrived_;  // signalled on submit and close
  std::vector<Pending> ring_ GUARDED_BY(mu_);  // count_ live entries from head_
  size_t head_ GUARDED_BY(mu_) = 0;
  size_t count_ GUARDED_BY(mu_) = 0;
  uint64_t submitted_ GUARDED_BY(mu_) = 0;  // total ever submitted
  bool closed_ GUARDED_BY(mu_) = false;
  BatcherStats stats_ GUARDED_BY(mu_);
  // Written by set_pump (under mu_) before the first next_batch, then only
  // read, by the consumer thread, which calls it without mu_: not guarded.
  Pump pump_;
  std::function<void()> wake_ GUARDED_BY(mu_);
};

}  // namespace moonseed::engine
