#include "engine/runtime/inference_batcher.h"

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "base/mutex.h"
#include "engine/runtime/clock.h"

namespace moonseed::engine {
namespace {

using std::chrono::microseconds;

// A request as the io thread would submit it: which group of envs it carries.
struct Request {
  std::string name;
};

Request req(const char* name) { return Request{name}; }

std::vector<std::string> names(const std::vector<Request>& batch) {
  std::vector<std::string> out;
  for (const Request& r : batch) out.push_back(r.name);
  return out;
}

TEST(InferenceBatcher, APumpedBatcherRunsThePumpInsteadOfSleepingAndTakesWhatItSubmits) {
  ManualClock clock;
  InferenceBatcher<Request> batcher(2, microseconds(1000), clock);
  int pumps = 0;
  batcher.set_pump(
      [&](std::chrono::nanoseconds) {
        ++pumps;
        batcher.submit(req(pumps == 1 ? "a" : "b"), 1);  // as socket handlers would
      },
      [] {});
  std::vector<Request> batch;
  ASSERT_TRUE(batcher.next_batch(batch));
  EXPECT_EQ(names(batch), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(pumps, 2);
  EXPECT_EQ(clock.sleeps(), 0);
}

TEST(InferenceBatcher, APumpedBatcherPumpsUntilTheDeadlineThenRunsAPartialBatch) {
  ManualClock clock;
  InferenceBatcher<Request> batcher(8, microseconds(1000), clock);
  std::vector<std::chrono::nanoseconds> waits;
  batcher.set_pump(
      [&](std::chrono::nanoseconds max_wait) {
        waits.push_back(max_wait);
        if (waits.size() == 1) {
          batcher.submit(req("a"), 1);
        } else {
          clock.advance(max_wait);  // nothing arrived while the pump waited
        }
      },
      [] {});
  std::vector<Request> batch;
  ASSERT_TRUE(batcher.next_batch(batch));
  EXPECT_EQ(names(batch), (std::vector<std::string>{"a"}));
  ASSERT_EQ(waits.size(), 2u);
  EXPECT_EQ(waits[1], std::chrono::microseconds(1000));  // exactly the time left to the deadline
  EXPECT_EQ(batcher.stats().deadline_batches, 1);
}

TEST(InferenceBatcher, CloseWakesAPumpAndAnEmptyPumpedBatcherReturnsFalse) {
  ManualClock clock;
  InferenceBatcher<Request> batcher(8, microseconds(1000), clock);
  std::atomic<int> wakes{0};
  std::atomic<bool> in_pump{false};
  batcher.set_pump(
      [&](std::chrono::nanoseconds) {
        in_pump = true;
        while (wakes.load() == 0) std::this_thread::yield();
      },
      [&] { ++wakes; });
  std::vector<Request> batch;
  std::thread inference([&] { EXPECT_FALSE(batcher.next_batch(batch)); });
  while (!in_pump) std::this_thread::yield();
  batcher.close();
  inference.join();
  EXPECT_EQ(wakes.load(), 1);
}

TEST(InferenceBatcher, ALoneRequestIsNotReturnedBeforeItsDeadline) {
  ManualClock clock;
  InferenceBatcher<Request> batcher(8, microseconds(1000), clock);
  ASSERT_TRUE(batcher.submit(req("a"), 2));

  std::vector<Request> batch;
  std::atomic<bool> returned{false};
  std::thread inference([&] {
    EXPECT_TRUE(batcher.next_batch(batch));
    returned = true;
  });
  clock.await_sleeps(1);  // waiting for the deadline
  clock.advance(microseconds(999));
  // Either it looked at the clock again and went back to sleep, or (wrongly) returned.
  while (clock.sleeps() < 2 && !returned) std::this_thread::yield();
  EXPECT_FALSE(returned);

  clock.advance(microseconds(1));
  inference.join();
  EXPECT_TRUE(returned);
  EXPECT_EQ(names(batch), std::vector<std::string>{"a"});
  EXPECT_EQ(batcher.stats().deadline_batches, 1);
}

TEST(InferenceBatcher, ALoneRequestIsReturnedOnceTheClockPassesItsDeadline) {
  ManualClock clock;
  InferenceBatcher<Request> batcher(8, microseconds(1000), clock);
  ASSERT_TRUE(batcher.submit(req("a"), 2));
  std::vector<Request> batch;
  EXPECT_FALSE(batcher.try_next_batch(batch));
  clock.advance(microseconds(999));
  EXPECT_FALSE(batcher.try_next_batch(batch));
  clock.advance(microseconds(5));
  ASSERT_TRUE(batcher.try_next_batch(batch));
  EXPECT_EQ(names(batch), std::vector<std::string>{"a"});
}

TEST(InferenceBatcher, AFullBatchIsReturnedWithoutWaitingForTheClock) {
  ManualClock clock;
  InferenceBatcher<Request> batcher(8, microseconds(1000), clock);
  ASSERT_TRUE(batcher.submit(req("a"), 4));
  ASSERT_TRUE(batcher.submit(req("b"), 4));
  ASSERT_TRUE(batcher.submit(req("c"), 1));
  std::vector<Request> batch;
  ASSERT_TRUE(batcher.next_batch(batch));  // the clock never moves in this test
  EXPECT_EQ(names(batch), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(clock.sleeps(), 0);
  EXPECT_EQ(batcher.stats().full_batches, 1);
  EXPECT_EQ(batcher.pending(), 1u);
}

TEST(InferenceBatcher, AFullBatchArrivingWhileWaitingEndsTheWait) {
  ManualClock clock;
  InferenceBatcher<Request> batcher(8, microseconds(1000), clock);
  ASSERT_TRUE(batcher.submit(req("a"), 3));
  std::vector<Request> batch;
  std::thread inference([&] { EXPECT_TRUE(batcher.next_batch(batch)); });
  clock.await_sleeps(1);
  ASSERT_TRUE(batcher.submit(req("b"), 5));
  inference.join();
  EXPECT_EQ(names(batch), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(batcher.stats().full_batches, 1);
}

TEST(InferenceBatcher, ARequestThatWouldOverflowMaxBatchGoesToTheNextBatch) {
  ManualClock clock;
  InferenceBatcher<Request> batcher(8, microseconds(1000), clock);
  ASSERT_TRUE(batcher.submit(req("a"), 5));
  ASSERT_TRUE(batcher.submit(req("b"), 4));  // 5 + 4 > 8: never split, waits its turn
  std::vector<Request> batch;
  ASSERT_TRUE(batcher.next_batch(batch));
  EXPECT_EQ(names(batch), std::vector<std::string>{"a"});
  EXPECT_EQ(batcher.stats().full_batches, 1);

  // "b" starts the next batch, which has room and so waits for b's deadline.
  EXPECT_FALSE(batcher.try_next_batch(batch));
  clock.advance(microseconds(1000));
  ASSERT_TRUE(batcher.try_next_batch(batch));
  EXPECT_EQ(names(batch), std::vector<std::string>{"b"});
}

TEST(InferenceBatcher, ARequestLargerThanMaxBatchRunsAloneAtOnce) {
  ManualClock clock;
  InferenceBatcher<Request> batcher(8, microseconds(1000), clock);
  ASSERT_TRUE(batcher.submit(req("big"), 20));
  ASSERT_TRUE(batcher.submit(req("small"), 1));
  std::vector<Request> batch;
  ASSERT_TRUE(batcher.next_batch(batch));
  EXPECT_EQ(names(batch), std::vector<std::string>{"big"});
  EXPECT_EQ(batcher.stats().envs, 20);
}

TEST(InferenceBatcher, TheDeadlineCountsFromTheOldestRequestsSubmitTime) {
  ManualClock clock;
  InferenceBatcher<Request> batcher(8, microseconds(1000), clock);
  ASSERT_TRUE(batcher.submit(req("a"), 1));
  clock.advance(microseconds(600));
  ASSERT_TRUE(batcher.submit(req("b"), 1));
  std::vector<Request> batch;
  EXPECT_FALSE(batcher.try_next_batch(batch));
  clock.advance(microseconds(400));  // a has waited 1000us, b only 400us
  ASSERT_TRUE(batcher.try_next_batch(batch));
  EXPECT_EQ(names(batch), (std::vector<std::string>{"a", "b"}));
}

TEST(InferenceBatcher, ARequestLeftOverFromAFullBatchKeepsItsOwnSubmitTime) {
  ManualClock clock;
  InferenceBatcher<Request> batcher(4, microseconds(1000), clock);
  ASSERT_TRUE(batcher.submit(req("a"), 4));
  ASSERT_TRUE(batcher.submit(req("b"), 1));
  clock.advance(microseconds(1500));  // b is already past its deadline
  std::vector<Request> batch;
  ASSERT_TRUE(batcher.next_batch(batch));
  EXPECT_EQ(names(batch), std::vector<std::string>{"a"});
  ASSERT_TRUE(batcher.next_batch(batch));
  EXPECT_EQ(names(batch), std::vector<std::string>{"b"});
  EXPECT_EQ(batcher.stats().deadline_batches, 1);
}

TEST(InferenceBatcher, CloseDrainsPendingRequestsWithoutWaitingThenReturnsFalse) {
  ManualClock clock;
  InferenceBatcher<Request> batcher(4, microseconds(1000), clock);
  ASSERT_TRUE(batcher.submit(req("a"), 2));
  ASSERT_TRUE(batcher.submit(req("b"), 1));
  ASSERT_TRUE(batcher.submit(req("c"), 3));
  batcher.close();
  std::vector<Request> batch;
  ASSERT_TRUE(batcher.next_batch(batch));
  EXPECT_EQ(names(batch), (std::vector<std::string>{"a", "b"}));
  ASSERT_TRUE(batcher.next_batch(batch));
  EXPECT_EQ(names(batch), std::vector<std::string>{"c"});
  EXPECT_FALSE(batcher.next_batch(batch));
  EXPECT_TRUE(batch.empty());
  EXPECT_EQ(clock.sleeps(), 0);
}

TEST(InferenceBatcher, CloseWakesANextBatchWaitingForItsDeadline) {
  ManualClock clock;
  InferenceBatcher<Request> batcher(4, microseconds(1000), clock);
  ASSERT_TRUE(batcher.submit(req("a"), 1));
  std::vector<Request> batch;
  std::thread inference([&] { EXPECT_TRUE(batcher.next_batch(batch)); });
  clock.await_sleeps(1);
  batcher.close();
  inference.join();
  EXPECT_EQ(names(batch), std::vector<std::string>{"a"});
  EXPECT_EQ(batcher.stats().drained_batches, 1);
}

TEST(InferenceBatcher, CloseWakesAnIdleNextBatchWhichReturnsFalse) {
  ManualClock clock;
  InferenceBatcher<Request> batcher(4, microseconds(1000), clock);
  std::vector<Request> batch;
  std::atomic<int> result{-1};
  std::thread inference([&] { result = batcher.next_batch(batch) ? 1 : 0; });
  batcher.close();
  inference.join();
  EXPECT_EQ(result, 0);
}

TEST(InferenceBatcher, SubmitAfterCloseIsRefusedAndLeavesTheRequestWithTheCaller) {
  ManualClock clock;
  InferenceBatcher<Request> batcher(4, microseconds(1000), clock);
  batcher.close();
  Request r = req("late");
  EXPECT_FALSE(batcher.submit(std::move(r), 1));
  EXPECT_EQ(r.name, "late");
  EXPECT_EQ(batcher.pending(), 0u);
}

TEST(InferenceBatcher, StatsCountBatchesRequestsEnvsAndWhyEachBatchClosed) {
  ManualClock clock;
  InferenceBatcher<Request> batcher(4, microseconds(100), clock);
  std::vector<Request> batch;
  ASSERT_TRUE(batcher.submit(req("a"), 2));
  ASSERT_TRUE(batcher.submit(req("b"), 2));
  ASSERT_TRUE(batcher.next_batch(batch));  // full
  ASSERT_TRUE(batcher.submit(req("c"), 3));
  clock.advance(microseconds(100));
  ASSERT_TRUE(batcher.next_batch(batch));  // deadline
  ASSERT_TRUE(batcher.submit(req("d"), 1));
  batcher.close();
  ASSERT_TRUE(batcher.next_batch(batch));  // drained

  const BatcherStats s = batcher.stats();
  EXPECT_EQ(s.batches, 3);
  EXPECT_EQ(s.requests, 4);
  EXPECT_EQ(s.envs, 8);
  EXPECT_EQ(s.full_batches, 1);
  EXPECT_EQ(s.deadline_batches, 1);
  EXPECT_EQ(s.drained_batches, 1);
}

TEST(InferenceBatcher, KeepsArrivalOrderWhenManyRequestsQueueUp) {
  ManualClock clock;
  InferenceBatcher<Request> batcher(1000, microseconds(0), clock);
  // More requests than the initial ring holds, so it has to grow.
  for (int i = 0; i < 5000; ++i) ASSERT_TRUE(batcher.submit(Request{std::to_string(i)}, 1));
  std::vector<Request> batch;
  int expected = 0;
  for (int b = 0; b < 5; ++b) {
    ASSERT_TRUE(batcher.next_batch(batch));
    ASSERT_EQ(batch.size(), 1000u);
    for (const Request& r : batch) EXPECT_EQ(r.name, std::to_string(expected++));
  }
}

TEST(InferenceBatcher, RejectsANonPositiveEnvCount) {
  ManualClock clock;
  InferenceBatcher<Request> batcher(4, microseconds(1000), clock);
  EXPECT_THROW(batcher.submit(req("a"), 0), std::invalid_argument);
}

TEST(InferenceBatcher, RejectsANonPositiveMaxBatch) {
  ManualClock clock;
  EXPECT_THROW(InferenceBatcher<Request>(0, microseconds(1000), clock), std::invalid_argument);
}

TEST(InferenceBatcher, RunsALoneRequestOnTheSteadyClock) {
  SteadyClock clock;
  InferenceBatcher<Request> batcher(64, microseconds(200), clock);
  std::vector<Request> batch;
  std::thread io([&] { ASSERT_TRUE(batcher.submit(req("a"), 1)); });
  ASSERT_TRUE(batcher.next_batch(batch));
  io.join();
  EXPECT_EQ(names(batch), std::vector<std::string>{"a"});
  EXPECT_EQ(batcher.stats().deadline_batches, 1);
}

TEST(ManualClock, AdvanceWakesAWaiterWhoseDeadlinePassed) {
  ManualClock clock;
  base::Mutex mu;
  base::CondVar cv;
  std::atomic<int> woke{-1};
  std::thread waiter([&] {
    base::MutexLock lock(mu);
    woke = clock.wait_until(lock, cv, clock.now() + microseconds(10), [] { return false; }) ? 1 : 0;
  });
  clock.await_sleeps(1);
  clock.advance(microseconds(10));
  waiter.join();
  EXPECT_EQ(woke, 0);  // woken by time, not by the condition
  EXPECT_EQ(clock.now().time_since_epoch(), microseconds(10));
}

}  // namespace
}  // namespace moonseed::engine
