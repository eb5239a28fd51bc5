// Locks the thread-safety analysis can follow (base/thread_annotations.h):
// libstdc++'s std::mutex carries no attributes, so these wrap the std types
// and add the attributes, nothing else. Every member is an inline call of the
// std type's, so they cost what the std types cost.
//
//   base::Mutex        std::mutex: lock / unlock / try_lock.
//   base::MutexLock    std::unique_lock<std::mutex>: held from construction to
//                      destruction, may be let go and taken again in between
//                      (unlock() / lock()), and is what base::CondVar waits with.
//   base::CondVar      std::condition_variable over a MutexLock (not
//                      condition_variable_any, which takes a second lock per wait).
//   base::SharedMutex  std::shared_mutex, with ReaderMutexLock (shared) and
//                      WriterMutexLock (exclusive).
//
// Waiting with a predicate: the predicate runs with the lock held, but the
// analysis checks a lambda as a function of its own and does not know that;
// say so on the lambda:
//   not_empty_.wait(lock, [&]() REQUIRES(mu_) { return !items_.empty(); });
//
// Thread-safety: as the std types underneath.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <shared_mutex>
#include <type_traits>
#include <utility>

#include "base/thread_annotations.h"

namespace moonseed::base {

class CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void lock() ACQUIRE() { mu_.lock(); }
  void unlock() RELEASE() { mu_.unlock(); }
  bool try_lock() TRY_ACQUIRE(true) { return mu_.try_lock(); }

  // Tells the analysis that the calling thread holds this mutex, where it
  // cannot see it taken (a callback that its caller runs under the lock).
  // Checks nothing at run time: a std::mutex cannot say who holds it.
  void assert_held() const ASSERT_CAPABILITY(this) {}

 private:
  friend class MutexLock;
  std::mutex mu_;
};

// Holds a Mutex for its scope. unlock() lets it go early (slow work, or a
// notify after the state change); lock() takes it again; the destructor
// releases it only if held.
class SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mu) ACQUIRE(mu) : lock_(mu.mu_) {}
  ~MutexLock() RELEASE() {}
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

  void unlock() RELEASE() { lock_.unlock(); }
  void lock() ACQUIRE() { lock_.lock(); }

  // The mutex this lock is for. Found from the std::mutex, which a Mutex
  // begins with, rather than stored: the lock stays a std::unique_lock's size.
  Mutex& mutex() const {
    static_assert(std::is_standard_layout_v<Mutex>, "a Mutex must begin with its std::mutex");
    return *reinterpret_cast<Mutex*>(lock_.mutex());
  }
  // The std::unique_lock underneath, for std::condition_variable. The analysis
  // does not follow what is done through it.
  std::unique_lock<std::mutex>& native() { return lock_; }

 private:
  std::unique_lock<std::mutex> lock_;
};

// A std::condition_variable whose waits take a MutexLock. A wait releases the
// lock while asleep and holds it again when it returns, so from the caller's
// side (and the analysis') the lock is held throughout. Spurious wake-ups
// happen as with the std type: wait in a loop, or use a predicate form.
class CondVar {
 public:
  CondVar() = default;
  CondVar(const CondVar&) = delete;
  CondVar& operator=(const CondVar&) = delete;

  void notify_one() noexcept { cv_.notify_one(); }
  void notify_all() noexcept { cv_.notify_all(); }

  void wait(MutexLock& lock) { cv_.wait(lock.native()); }
  // Until ready() (checked under the lock, first before any sleep).
  template <typename Predicate>
  void wait(MutexLock& lock, Predicate&& ready) {
    cv_.wait(lock.native(), std::forward<Predicate>(ready));
  }

  // std::cv_status::timeout once `timeout` / `deadline` has passed.
  template <typename Rep, typename Period>
  std::cv_status wait_for(MutexLock& lock, const std::chrono::duration<Rep, Period>& timeout) {
    return cv_.wait_for(lock.native(), timeout);
  }
  template <typename Clock, typename Duration>
  std::cv_status wait_until(MutexLock& lock, const std::chrono::time_point<Clock, Duration>& deadline) {
    return cv_.wait_until(lock.native(), deadline);
  }
  // Until ready() or the time is up; returns ready() as last evaluated.
  template <typename Rep, typename Period, typename Predicate>
  bool wait_for(MutexLock& lock, const std::chrono::duration<Rep, Period>& timeout, Predicate&& ready) {
    return cv_.wait_for(lock.native(), timeout, std::forward<Predicate>(ready));
  }
  template <typename Clock, typename Duration, typename Predicate>
  bool wait_until(MutexLock& lock, const std::chrono::time_point<Clock, Duration>& deadline,
                  Predicate&& ready) {
    return cv_.wait_until(lock.native(), deadline, std::forward<Predicate>(ready));
  }

 private:
  std::condition_variable cv_;
};

class CAPABILITY("shared mutex") SharedMutex {
 public:
  SharedMutex() = default;
  SharedMutex(const SharedMutex&) = delete;
  SharedMutex& operator=(const SharedMutex&) = delete;

  void lock() ACQUIRE() { mu_.lock(); }
  void unlock() RELEASE() { mu_.unlock(); }
  bool try_lock() TRY_ACQUIRE(true) { return mu_.try_lock(); }

  void lock_shared() ACQUIRE_SHARED() { mu_.lock_shared(); }
  void unlock_shared() RELEASE_SHARED() { mu_.unlock_shared(); }
  bool try_lock_shared() TRY_ACQUIRE_SHARED(true) { return mu_.try_lock_shared(); }

  // As Mutex::assert_held, for either mode.
  void assert_held() const ASSERT_CAPABILITY(this) {}
  void assert_reader_held() const ASSERT_SHARED_CAPABILITY(this) {}

 private:
  std::shared_mutex mu_;
};

// Holds a SharedMutex shared (readers run together) for its scope.
class SCOPED_CAPABILITY ReaderMutexLock {
 public:
  explicit ReaderMutexLock(SharedMutex& mu) ACQUIRE_SHARED(mu) : mu_(mu) { mu_.lock_shared(); }
  ~ReaderMutexLock() RELEASE() { mu_.unlock_shared(); }
  ReaderMutexLock(const ReaderMutexLock&) = delete;
  ReaderMutexLock& operator=(const ReaderMutexLock&) = delete;

 private:
  SharedMutex& mu_;
};

// Holds a SharedMutex exclusively for its scope.
class SCOPED_CAPABILITY WriterMutexLock {
 public:
  explicit WriterMutexLock(SharedMutex& mu) ACQUIRE(mu) : mu_(mu) { mu_.lock(); }
  ~WriterMutexLock() RELEASE() { mu_.unlock(); }
  WriterMutexLock(const WriterMutexLock&) = delete;
  WriterMutexLock& operator=(const WriterMutexLock&) = delete;

 private:
  SharedMutex& mu_;
};

}  // namespace moonseed::base
