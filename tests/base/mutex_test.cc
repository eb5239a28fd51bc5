#include "base/mutex.h"

#include <chrono>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

// Real threads, and no test depends on how long anything takes: a wait that
// should end but does not hangs, and the ctest timeout turns that into a failure.

namespace moonseed::base {
namespace {

using std::chrono::milliseconds;

// Asked from another thread: a thread must not try_lock a std::mutex it holds.
bool free_for_another_thread(Mutex& mu) {
  bool took = false;
  std::thread other([&] {
    if (mu.try_lock()) {
      took = true;
      mu.unlock();
    }
  });
  other.join();
  return took;
}

struct Counter {
  Mutex mu;
  int value GUARDED_BY(mu) = 0;
};

TEST(Mutex, KeepsReadModifyWritesOfSeveralThreadsApart) {
  Counter counter;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&counter] {
      for (int i = 0; i < 2000; ++i) {
        MutexLock lock(counter.mu);
        const int seen = counter.value;
        std::this_thread::yield();  // invites a race, were the lock not exclusive
        counter.value = seen + 1;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  MutexLock lock(counter.mu);
  EXPECT_EQ(counter.value, 8000);
}

TEST(Mutex, TryLockFailsWhileAnotherThreadHoldsIt) {
  Mutex mu;
  {
    MutexLock lock(mu);
    EXPECT_FALSE(free_for_another_thread(mu));
  }
  EXPECT_TRUE(free_for_another_thread(mu));
}

TEST(MutexLock, UnlockLetsOthersInAndLockTakesTheMutexBack) {
  Mutex mu;
  MutexLock lock(mu);
  EXPECT_EQ(&lock.mutex(), &mu);
  lock.unlock();
  EXPECT_TRUE(free_for_another_thread(mu));
  lock.lock();
  EXPECT_FALSE(free_for_another_thread(mu));
}

TEST(MutexLock, ReleasesAtTheEndOfItsScopeEvenAfterAnEarlyUnlock) {
  Mutex mu;
  {
    MutexLock lock(mu);
    lock.unlock();
  }  // must not unlock a second time
  EXPECT_TRUE(free_for_another_thread(mu));
  {
    MutexLock lock(mu);
    lock.unlock();
    lock.lock();
  }
  EXPECT_TRUE(free_for_another_thread(mu));
}

struct Flag {
  Mutex mu;
  CondVar changed;
  bool set GUARDED_BY(mu) = false;
  int waiting GUARDED_BY(mu) = 0;  // threads between taking mu and sleeping
  int woken GUARDED_BY(mu) = 0;
};

TEST(CondVar, NotifyOneWakesAWaiterThatSeesTheChange) {
  Flag flag;
  bool saw = false;
  std::thread waiter([&] {
    MutexLock lock(flag.mu);
    flag.changed.wait(lock, [&]() REQUIRES(flag.mu) { return flag.set; });
    saw = flag.set;
  });
  {
    MutexLock lock(flag.mu);  // taken while the waiter sleeps: wait() let it go
    flag.set = true;
  }
  flag.changed.notify_one();
  waiter.join();
  EXPECT_TRUE(saw);
}

TEST(CondVar, NotifyAllWakesEverySleepingWaiter) {
  Flag flag;
  CondVar asleep;
  std::vector<std::thread> waiters;
  for (int t = 0; t < 4; ++t) {
    waiters.emplace_back([&] {
      MutexLock lock(flag.mu);
      ++flag.waiting;
      asleep.notify_one();
      // Counted and asleep without letting mu go in between.
      flag.changed.wait(lock, [&]() REQUIRES(flag.mu) { return flag.set; });
      ++flag.woken;
    });
  }
  {
    MutexLock lock(flag.mu);
    asleep.wait(lock, [&]() REQUIRES(flag.mu) { return flag.waiting == 4; });
    flag.set = true;
  }
  flag.changed.notify_all();
  for (std::thread& t : waiters) t.join();
  MutexLock lock(flag.mu);
  EXPECT_EQ(flag.woken, 4);
}

TEST(CondVar, APlainWaitReturnsOnceNotified) {
  Flag flag;
  std::thread waiter([&] {
    MutexLock lock(flag.mu);
    ++flag.waiting;
    flag.changed.notify_all();
    while (!flag.set) flag.changed.wait(lock);  // a wake-up may be spurious
    ++flag.woken;
  });
  {
    MutexLock lock(flag.mu);
    while (flag.waiting == 0) flag.changed.wait(lock);
    flag.set = true;
  }
  flag.changed.notify_all();
  waiter.join();
  MutexLock lock(flag.mu);
  EXPECT_EQ(flag.woken, 1);
}

TEST(CondVar, TimedWaitsGiveUpWhenNothingChanges) {
  Flag flag;
  MutexLock lock(flag.mu);
  auto is_set = [&]() REQUIRES(flag.mu) { return flag.set; };
  EXPECT_FALSE(flag.changed.wait_for(lock, milliseconds(1), is_set));
  EXPECT_FALSE(flag.changed.wait_until(lock, std::chrono::steady_clock::now() + milliseconds(1), is_set));
  // A deadline already past: no sleep at all.
  EXPECT_EQ(flag.changed.wait_until(lock, std::chrono::steady_clock::now() - milliseconds(1)),
            std::cv_status::timeout);
  // Without a predicate a wake-up may be spurious; it ends in a timeout all the same.
  while (flag.changed.wait_for(lock, milliseconds(1)) == std::cv_status::no_timeout) {
  }
  // The lock is held again after every kind of wait.
  EXPECT_FALSE(free_for_another_thread(flag.mu));
}

TEST(CondVar, TimedWaitsReturnTrueWhenTheChangeComesFirst) {
  Flag flag;
  bool by_duration = false;
  bool by_deadline = false;
  std::thread waiter([&] {
    MutexLock lock(flag.mu);
    auto is_set = [&]() REQUIRES(flag.mu) { return flag.set; };
    ++flag.waiting;
    flag.changed.notify_all();
    // An hour stands for "never" here: the test ends long before.
    by_duration = flag.changed.wait_for(lock, std::chrono::hours(1), is_set);
    by_deadline = flag.changed.wait_until(lock, std::chrono::steady_clock::now() + std::chrono::hours(1), is_set);
  });
  {
    MutexLock lock(flag.mu);
    flag.changed.wait(lock, [&]() REQUIRES(flag.mu) { return flag.waiting == 1; });
    flag.set = true;
  }
  flag.changed.notify_all();
  waiter.join();
  EXPECT_TRUE(by_duration);
  EXPECT_TRUE(by_deadline);
}

// Asked from another thread, as above.
bool readable_by_another_thread(SharedMutex& mu) {
  bool took = false;
  std::thread other([&] {
    if (mu.try_lock_shared()) {
      took = true;
      mu.unlock_shared();
    }
  });
  other.join();
  return took;
}

bool writable_by_another_thread(SharedMutex& mu) {
  bool took = false;
  std::thread other([&] {
    if (mu.try_lock()) {
      took = true;
      mu.unlock();
    }
  });
  other.join();
  return took;
}

TEST(SharedMutex, ReadersShareItAndKeepWritersOut) {
  SharedMutex mu;
  {
    ReaderMutexLock reader(mu);
    EXPECT_TRUE(readable_by_another_thread(mu));
    EXPECT_FALSE(writable_by_another_thread(mu));
    std::thread second_reader([&] { ReaderMutexLock also(mu); });  // must not block
    second_reader.join();
  }
  EXPECT_TRUE(writable_by_another_thread(mu));
}

TEST(SharedMutex, AWriterKeepsEveryoneOut) {
  SharedMutex mu;
  {
    WriterMutexLock writer(mu);
    EXPECT_FALSE(readable_by_another_thread(mu));
    EXPECT_FALSE(writable_by_another_thread(mu));
  }
  EXPECT_TRUE(readable_by_another_thread(mu));
  EXPECT_TRUE(writable_by_another_thread(mu));
}

struct Pair {
  SharedMutex mu;
  int first GUARDED_BY(mu) = 0;
  int second GUARDED_BY(mu) = 0;  // equal to first whenever mu is free
};

TEST(SharedMutex, ReadersNeverSeeAWriteHalfDone) {
  Pair pair;
  std::vector<std::thread> threads;
  std::vector<int> torn(2, 0);
  for (int w = 0; w < 2; ++w) {
    threads.emplace_back([&pair] {
      for (int i = 0; i < 2000; ++i) {
        WriterMutexLock lock(pair.mu);
        ++pair.first;
        std::this_thread::yield();
        ++pair.second;
      }
    });
  }
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&pair, &torn, r] {
      for (int i = 0; i < 2000; ++i) {
        ReaderMutexLock lock(pair.mu);
        if (pair.first != pair.second) ++torn[static_cast<size_t>(r)];
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(torn, (std::vector<int>{0, 0}));
  ReaderMutexLock lock(pair.mu);
  EXPECT_EQ(pair.first, 4000);
  EXPECT_EQ(pair.second, 4000);
}

}  // namespace
}  // namespace moonseed::base
