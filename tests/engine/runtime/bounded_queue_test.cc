#include "engine/runtime/bounded_queue.h"

#include <atomic>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <thread>

#include <gtest/gtest.h>

namespace moonseed::engine {
namespace {

// Yields until `done()`; used only to learn that another thread is blocked,
// never to measure time.
template <typename F>
void spin_until(F done) {
  while (!done()) std::this_thread::yield();
}

TEST(BoundedQueue, PopsItemsInTheOrderTheyWerePushed) {
  BoundedQueue<int> q(3);
  for (int round = 0; round < 4; ++round) {  // wraps around the ring
    ASSERT_TRUE(q.push(round * 10 + 1));
    ASSERT_TRUE(q.push(round * 10 + 2));
    ASSERT_TRUE(q.push(round * 10 + 3));
    EXPECT_EQ(q.size(), 3u);
    EXPECT_EQ(q.pop(), round * 10 + 1);
    EXPECT_EQ(q.pop(), round * 10 + 2);
    EXPECT_EQ(q.pop(), round * 10 + 3);
    EXPECT_EQ(q.size(), 0u);
  }
}

TEST(BoundedQueue, PushBlocksWhileFullUntilAPopMakesRoom) {
  BoundedQueue<int> q(2);
  ASSERT_TRUE(q.push(1));
  ASSERT_TRUE(q.push(2));
  std::atomic<bool> third_pushed{false};
  std::thread producer([&] {
    EXPECT_TRUE(q.push(3));
    third_pushed = true;
  });
  spin_until([&] { return q.waiting_producers() == 1; });
  EXPECT_FALSE(third_pushed);
  EXPECT_EQ(q.size(), 2u);

  EXPECT_EQ(q.pop(), 1);
  producer.join();
  EXPECT_TRUE(third_pushed);
  EXPECT_EQ(q.pop(), 2);
  EXPECT_EQ(q.pop(), 3);
}

TEST(BoundedQueue, PopBlocksWhileEmptyUntilAPushArrives) {
  BoundedQueue<int> q(2);
  std::optional<int> got;
  std::thread consumer([&] { got = q.pop(); });
  spin_until([&] { return q.waiting_consumers() == 1; });
  ASSERT_TRUE(q.push(7));
  consumer.join();
  EXPECT_EQ(got, 7);
}

TEST(BoundedQueue, CloseWakesABlockedPopWhichReturnsNothing) {
  BoundedQueue<int> q(1);
  std::optional<int> got = 99;
  std::thread consumer([&] { got = q.pop(); });
  spin_until([&] { return q.waiting_consumers() == 1; });
  q.close();
  consumer.join();
  EXPECT_FALSE(got.has_value());
}

TEST(BoundedQueue, CloseWakesABlockedPushWhichReturnsFalse) {
  BoundedQueue<int> q(1);
  ASSERT_TRUE(q.push(1));
  std::atomic<int> result{-1};
  std::thread producer([&] { result = q.push(2) ? 1 : 0; });
  spin_until([&] { return q.waiting_producers() == 1; });
  q.close();
  producer.join();
  EXPECT_EQ(result, 0);
  EXPECT_EQ(q.size(), 1u);
}

TEST(BoundedQueue, PushAfterCloseReturnsFalseAndKeepsNothing) {
  BoundedQueue<int> q(4);
  q.close();
  EXPECT_FALSE(q.push(1));
  EXPECT_EQ(q.size(), 0u);
  EXPECT_TRUE(q.closed());
}

TEST(BoundedQueue, PopDrainsRemainingItemsAfterCloseThenReturnsNothing) {
  BoundedQueue<int> q(4);
  ASSERT_TRUE(q.push(1));
  ASSERT_TRUE(q.push(2));
  q.close();
  EXPECT_EQ(q.pop(), 1);
  EXPECT_EQ(q.pop(), 2);
  EXPECT_FALSE(q.pop().has_value());
  EXPECT_FALSE(q.pop().has_value());
}

TEST(BoundedQueue, TryPopReturnsNothingWhenEmptyAndTheFrontOtherwise) {
  BoundedQueue<int> q(2);
  EXPECT_FALSE(q.try_pop().has_value());
  ASSERT_TRUE(q.push(5));
  EXPECT_EQ(q.try_pop(), 5);
  EXPECT_FALSE(q.try_pop().has_value());
}

TEST(BoundedQueue, PopForGivesUpWhenNothingArrives) {
  BoundedQueue<int> q(2);
  EXPECT_FALSE(q.pop_for(std::chrono::milliseconds(1)).has_value());
  EXPECT_EQ(q.waiting_consumers(), 0);
}

TEST(BoundedQueue, PopForReturnsAnItemThatIsAlreadyThere) {
  BoundedQueue<int> q(2);
  ASSERT_TRUE(q.push(3));
  EXPECT_EQ(q.pop_for(std::chrono::hours(1)), 3);
}

TEST(BoundedQueue, CarriesMoveOnlyItems) {
  BoundedQueue<std::unique_ptr<int>> q(1);
  ASSERT_TRUE(q.push(std::make_unique<int>(42)));
  std::optional<std::unique_ptr<int>> got = q.pop();
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(**got, 42);
}

TEST(BoundedQueue, DeliversEveryItemOnceWithManyProducersAndConsumers) {
  BoundedQueue<int> q(3);
  constexpr int kPerProducer = 2000;
  std::atomic<long> sum{0};
  std::atomic<int> count{0};
  std::vector<std::thread> threads;
  for (int p = 0; p < 2; ++p) {
    threads.emplace_back([&, p] {
      for (int i = 1; i <= kPerProducer; ++i) ASSERT_TRUE(q.push(p * kPerProducer + i));
    });
  }
  std::vector<std::thread> consumers;
  for (int c = 0; c < 2; ++c) {
    consumers.emplace_back([&] {
      while (std::optional<int> v = q.pop()) {
        sum += *v;
        ++count;
      }
    });
  }
  for (auto& t : threads) t.join();
  q.close();
  for (auto& t : consumers) t.join();
  const long n = 2 * kPerProducer;
  EXPECT_EQ(count, n);
  EXPECT_EQ(sum, n * (n + 1) / 2);
}

TEST(BoundedQueue, RejectsZeroCapacity) {
  EXPECT_THROW(BoundedQueue<int>(0), std::invalid_argument);
}

}  // namespace
}  // namespace moonseed::engine
