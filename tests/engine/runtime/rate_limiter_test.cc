#include "engine/runtime/rate_limiter.h"

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "engine/runtime/clock.h"

namespace moonseed::engine {
namespace {

using std::chrono::milliseconds;
// Long enough never to expire in a test that uses the manual clock (it only
// moves by advance()).
constexpr milliseconds kForever{3'600'000};
constexpr milliseconds kNow{0};

RateLimiterConfig config(double spi, int64_t min_size, double error_buffer) {
  RateLimiterConfig c;
  c.samples_per_insert = spi;
  c.min_size_to_sample = min_size;
  c.error_buffer = error_buffer;
  return c;
}

std::string config_error(const RateLimiterConfig& c) {
  try {
    RateLimiter limiter(c);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(no exception)";
}

TEST(RateLimiterTest, RejectsABadConfigNamingTheField) {
  EXPECT_NE(config_error(config(-1, 1, 1)).find("samples_per_insert"), std::string::npos);
  EXPECT_NE(config_error(config(1, 0, 1)).find("min_size_to_sample"), std::string::npos);
  const std::string small_buffer = config_error(config(4, 1, 3));
  EXPECT_NE(small_buffer.find("error_buffer"), std::string::npos) << small_buffer;
  EXPECT_NE(small_buffer.find("4"), std::string::npos) << small_buffer;
  EXPECT_NE(config_error(config(0, 1, 0.5)).find("error_buffer"), std::string::npos);
  EXPECT_EQ(config_error(config(4, 1, 4)), "(no exception)");
}

TEST(RateLimiterTest, RejectsRequestsThatCouldNeverBeGranted) {
  RateLimiter limiter(config(2, 1, 4));
  EXPECT_THROW(limiter.await_insert(0, kNow), std::invalid_argument);
  EXPECT_THROW(limiter.await_insert(3, kNow), std::invalid_argument);  // 3 * 2 > 4
  EXPECT_THROW(limiter.await_sample(5, kNow), std::invalid_argument);  // 5 > 4
  EXPECT_THROW(limiter.inserted(-1), std::invalid_argument);
  EXPECT_TRUE(limiter.await_insert(2, kNow));
}

TEST(RateLimiterTest, SamplingWaitsForMinSizeToSampleInserts) {
  RateLimiter limiter(config(0, 3, 1));
  EXPECT_FALSE(limiter.await_sample(1, kNow));
  limiter.inserted(2);
  EXPECT_FALSE(limiter.await_sample(1, kNow));
  limiter.inserted(1);
  EXPECT_TRUE(limiter.await_sample(1, kNow));
}

TEST(RateLimiterTest, WithoutARatioInsertingNeverWaitsAndSamplingOnlyWaitsForMinSize) {
  RateLimiter limiter(config(0, 1, 1));
  limiter.inserted(100);
  EXPECT_TRUE(limiter.await_insert(1000, kNow));
  EXPECT_TRUE(limiter.await_sample(5000, kNow));
  limiter.sampled(1'000'000);
  EXPECT_TRUE(limiter.await_sample(1, kNow));
}

TEST(RateLimiterTest, ABlockedSamplerIsReleasedWhenMinSizeIsReached) {
  ManualClock clock;
  RateLimiter limiter(config(1, 3, 2), &clock);
  std::atomic<bool> done{false};
  bool granted = false;
  std::thread sampler([&] {
    granted = limiter.await_sample(1, kForever);
    done = true;
  });
  clock.await_sleeps(1);
  limiter.inserted(2);
  clock.await_sleeps(2);  // woke, looked, slept again
  EXPECT_FALSE(done);
  limiter.inserted(1);
  sampler.join();
  EXPECT_TRUE(granted);
}

TEST(RateLimiterTest, InsertBlocksWhenTooFarAheadAndIsReleasedBySampling) {
  // SPI 2, M 1, E 2: d = (I - 1) * 2 - S.
  ManualClock clock;
  RateLimiter limiter(config(2, 1, 2), &clock);
  limiter.inserted(1);                        // d = 0
  ASSERT_TRUE(limiter.await_insert(1, kNow));  // 0 + 2 <= 2
  limiter.inserted(1);                        // d = 2
  ASSERT_FALSE(limiter.await_insert(1, kNow));  // 2 + 2 > 2

  std::atomic<bool> done{false};
  bool granted = false;
  std::thread inserter([&] {
    granted = limiter.await_insert(1, kForever);
    done = true;
  });
  clock.await_sleeps(1);
  limiter.sampled(1);  // d = 1: 1 + 2 > 2, still waiting
  clock.await_sleeps(2);
  EXPECT_FALSE(done);
  limiter.sampled(1);  // d = 0: 0 + 2 <= 2
  inserter.join();
  EXPECT_TRUE(granted);
  EXPECT_EQ(limiter.stats().samples, 2);
}

TEST(RateLimiterTest, SampleBlocksWhenAheadOfInsertsAndIsReleasedByInserting) {
  // SPI 1, M 2, E 1: d = (I - 2) - S.
  ManualClock clock;
  RateLimiter limiter(config(1, 2, 1), &clock);
  limiter.inserted(2);                        // d = 0
  ASSERT_TRUE(limiter.await_sample(1, kNow));  // 0 - 1 >= -1
  limiter.sampled(1);                         // d = -1
  ASSERT_FALSE(limiter.await_sample(1, kNow));

  std::atomic<bool> done{false};
  bool granted = false;
  std::thread sampler([&] {
    granted = limiter.await_sample(1, kForever);
    done = true;
  });
  clock.await_sleeps(1);
  EXPECT_FALSE(done);
  limiter.inserted(1);  // d = 0
  sampler.join();
  EXPECT_TRUE(granted);
}

TEST(RateLimiterTest, MinSizeOffsetsTheRatioSoFillingDoesNotOweSamples) {
  // With SPI 8 and M 100, the first inserts after filling may go without
  // 800 samples first.
  RateLimiter limiter(config(8, 100, 8));
  limiter.inserted(100);
  EXPECT_TRUE(limiter.await_insert(1, kNow));   // d = 0: 0 + 8 <= 8
  limiter.inserted(1);                          // d = 8
  EXPECT_FALSE(limiter.await_insert(1, kNow));
  EXPECT_TRUE(limiter.await_sample(8, kNow));   // 8 - 8 >= -8
}

TEST(RateLimiterTest, TimeoutReturnsFalseAndCountsTheBlockedTime) {
  ManualClock clock;
  RateLimiter limiter(config(1, 1, 1), &clock);
  bool granted = true;
  std::thread sampler([&] { granted = limiter.await_sample(1, milliseconds(5)); });
  clock.await_sleeps(1);
  clock.advance(std::chrono::milliseconds(5));
  sampler.join();
  EXPECT_FALSE(granted);
  EXPECT_EQ(limiter.stats().sample_blocked, std::chrono::milliseconds(5));
  EXPECT_EQ(limiter.stats().insert_blocked, Clock::duration(0));
}

TEST(RateLimiterTest, CancelWakesEveryWaitingSamplerAndLaterAwaitsFailAtOnce) {
  ManualClock clock;
  RateLimiter limiter(config(1, 10, 1), &clock);
  bool granted[2] = {true, true};
  std::thread a([&] { granted[0] = limiter.await_sample(1, kForever); });
  std::thread b([&] { granted[1] = limiter.await_sample(1, kForever); });
  clock.await_sleeps(2);
  limiter.cancel();
  a.join();
  b.join();
  EXPECT_FALSE(granted[0]);
  EXPECT_FALSE(granted[1]);
  EXPECT_TRUE(limiter.cancelled());
  EXPECT_FALSE(limiter.await_insert(1, kForever));
}

TEST(RateLimiterTest, CancelWakesAWaitingInserter) {
  ManualClock clock;
  RateLimiter limiter(config(1, 1, 1), &clock);
  limiter.inserted(2);  // d = 1: 1 + 1 > 1
  bool granted = true;
  std::thread inserter([&] { granted = limiter.await_insert(1, kForever); });
  clock.await_sleeps(1);
  limiter.cancel();
  inserter.join();
  EXPECT_FALSE(granted);
}

TEST(RateLimiterTest, RestoreReplacesTheCountersAndWakesWaiters) {
  ManualClock clock;
  RateLimiter limiter(config(1, 5, 1), &clock);
  bool granted = false;
  std::thread sampler([&] { granted = limiter.await_sample(1, kForever); });
  clock.await_sleeps(1);
  limiter.restore({7, 2});  // d = (7 - 5) - 2 = 0
  sampler.join();
  EXPECT_TRUE(granted);
  EXPECT_EQ(limiter.counters().inserts, 7);
  EXPECT_EQ(limiter.counters().samples, 2);
  EXPECT_THROW(limiter.restore({-1, 0}), std::invalid_argument);
}

TEST(RateLimiterTest, AnInserterAndASamplerRunToTheEndWithinTheBoundsWithoutDeadlock) {
  // SPI 2, M 4, E 4; the sampler asks 4 at a time, the inserter 1 (2 <= 4):
  // the largest requests the bounds allow.
  RateLimiter limiter(config(2, 4, 4));
  constexpr int kInserts = 2000;
  constexpr int kBatches = (kInserts - 4) * 2 / 4;
  auto d = [&] {
    const RateLimiterCounters c = limiter.counters();
    return (static_cast<double>(c.inserts) - 4) * 2 - static_cast<double>(c.samples);
  };
  std::atomic<int> violations{0};
  std::thread inserter([&] {
    for (int i = 0; i < kInserts; ++i) {
      ASSERT_TRUE(limiter.await_insert(1, milliseconds(60'000)));
      // Only this thread inserts and sampling only lowers d: the bound still holds.
      if (limiter.counters().inserts >= 4 && d() + 2 > 4) ++violations;
      limiter.inserted(1);
    }
  });
  std::thread sampler([&] {
    for (int i = 0; i < kBatches; ++i) {
      ASSERT_TRUE(limiter.await_sample(4, milliseconds(60'000)));
      if (d() - 4 < -4) ++violations;
      limiter.sampled(4);
    }
  });
  inserter.join();
  sampler.join();
  EXPECT_EQ(violations, 0);
  EXPECT_EQ(limiter.stats().inserts, kInserts);
  EXPECT_EQ(limiter.stats().samples, kBatches * 4);
}

}  // namespace
}  // namespace moonseed::engine
