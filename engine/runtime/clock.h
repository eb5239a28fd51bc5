// Time behind a small interface so that deadline logic (the inference
// batcher's) is tested by moving a manual clock instead of sleeping.
//
// A Clock answers now() and waits on a caller's condition variable until a
// wake-up condition holds or a deadline on that clock passes. SteadyClock is
// the real one; ManualClock only moves when a test calls advance().
//
// Thread-safety: both implementations are safe to use from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <vector>

#include "base/mutex.h"

namespace moonseed::engine {

class Clock {
 public:
  using duration = std::chrono::nanoseconds;
  using time_point = std::chrono::time_point<std::chrono::steady_clock, duration>;

  virtual ~Clock() = default;

  virtual time_point now() const = 0;

  // Called with `lock` held, like base::CondVar::wait_until: blocks on `cv`
  // until `wake()` is true or now() >= deadline, and returns wake() evaluated
  // under the lock. `wake` is only evaluated with `lock` held (annotate the
  // lambda REQUIRES(that mutex)). The lock may be released while waiting, so
  // callers re-check their state after.
  virtual bool wait_until(base::MutexLock& lock, base::CondVar& cv, time_point deadline,
                          const std::function<bool()>& wake) = 0;
};

// std::chrono::steady_clock.
class SteadyClock final : public Clock {
 public:
  time_point now() const override;
  bool wait_until(base::MutexLock& lock, base::CondVar& cv, time_point deadline,
                  const std::function<bool()>& wake) override;
};

// A clock for tests: time starts at time_point{} and moves only by advance().
// A waiter whose deadline is passed by advance() wakes up; sleeps() counts
// how many times a waiter went to sleep, so a test can wait (await_sleeps)
// until a waiting thread has looked at the clock again after an advance.
//
// Lock order: ManualClock::waiters_mu_ -> the waiter's mutex -> sleeps_mu_.
// A waiter never holds its own mutex while taking waiters_mu_. (The waiter's
// mutex is the caller's, so only the comment can state the middle step.)
class ManualClock final : public Clock {
 public:
  time_point now() const override;
  bool wait_until(base::MutexLock& lock, base::CondVar& cv, time_point deadline,
                  const std::function<bool()>& wake) override EXCLUDES(waiters_mu_, sleeps_mu_);

  // Moves time forward and wakes every waiter. Throws std::invalid_argument
  // for a negative step.
  void advance(duration step) EXCLUDES(waiters_mu_);

  // How many times a waiter has gone to sleep on this clock.
  int64_t sleeps() const EXCLUDES(sleeps_mu_);
  // Blocks until sleeps() >= count.
  void await_sleeps(int64_t count) const EXCLUDES(sleeps_mu_);

 private:
  struct Waiter {
    base::Mutex* mutex;
    base::CondVar* cv;
  };

  std::atomic<int64_t> now_ns_{0};  // written under waiters_mu_, read anywhere

  base::Mutex waiters_mu_ ACQUIRED_BEFORE(sleeps_mu_);
  std::vector<Waiter> waiters_ GUARDED_BY(waiters_mu_);

  mutable base::Mutex sleeps_mu_;
  mutable base::CondVar sleeps_cv_;
  int64_t sleeps_ GUARDED_BY(sleeps_mu_) = 0;
};

}  // namespace moonseed::engine
