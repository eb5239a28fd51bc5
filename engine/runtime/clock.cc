#include "engine/runtime/clock.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace moonseed::engine {

Clock::time_point SteadyClock::now() const {
  return std::chrono::time_point_cast<duration>(std::chrono::steady_clock::now());
}

bool SteadyClock::wait_until(base::MutexLock& lock, base::CondVar& cv, time_point deadline,
                             const std::function<bool()>& wake) {
  return cv.wait_until(lock, deadline, wake);
}

Clock::time_point ManualClock::now() const {
  return time_point(duration(now_ns_.load(std::memory_order_acquire)));
}

bool ManualClock::wait_until(base::MutexLock& lock, base::CondVar& cv, time_point deadline,
                             const std::function<bool()>& wake) {
  // Registering needs waiters_mu_, which advance() holds while it takes the
  // waiter's mutex: release ours first so the two never nest the other way.
  // The caller's lock is let go through its std::unique_lock: the analysis
  // cannot follow a lock passed in, and to it the caller holds it throughout.
  base::Mutex* mutex = &lock.mutex();
  lock.native().unlock();
  {
    base::MutexLock guard(waiters_mu_);
    waiters_.push_back({mutex, &cv});
  }
  lock.native().lock();
  // Registered before the first look at the clock, so an advance() that lands
  // between the look and the sleep still finds us (it takes our mutex to notify).
  while (!wake() && now() < deadline) {
    {
      base::MutexLock guard(sleeps_mu_);
      ++sleeps_;
    }
    sleeps_cv_.notify_all();
    cv.wait(lock);
  }
  lock.native().unlock();
  {
    base::MutexLock guard(waiters_mu_);
    auto it = std::find_if(waiters_.begin(), waiters_.end(),
                           [&](const Waiter& w) { return w.cv == &cv && w.mutex == mutex; });
    waiters_.erase(it);
  }
  lock.native().lock();
  return wake();
}

void ManualClock::advance(duration step) {
  if (step.count() < 0) {
    throw std::invalid_argument("ManualClock::advance: negative step " +
                                std::to_string(step.count()) + " ns");
  }
  base::MutexLock guard(waiters_mu_);
  now_ns_.fetch_add(step.count(), std::memory_order_acq_rel);
  for (const Waiter& w : waiters_) {
    // Taking the waiter's mutex orders this notify after its check of the time.
    base::MutexLock waiter_guard(*w.mutex);
    w.cv->notify_all();
  }
}

int64_t ManualClock::sleeps() const {
  base::MutexLock guard(sleeps_mu_);
  return sleeps_;
}

void ManualClock::await_sleeps(int64_t count) const {
  base::MutexLock lock(sleeps_mu_);
  sleeps_cv_.wait(lock, [&]() REQUIRES(sleeps_mu_) { return sleeps_ >= count; });
}

}  // namespace moonseed::engine
