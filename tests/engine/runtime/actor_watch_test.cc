#include "engine/runtime/actor_watch.h"

#include <gtest/gtest.h>

#include <chrono>

namespace moonseed::engine {
namespace {

Clock::time_point at(double seconds) {
  return Clock::time_point(std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds)));
}

TEST(ActorWatch, AnActorThatOwesABatchAndStaysSilentPastTheFloorIsReported) {
  ActorWatch watch(/*actors=*/2, /*groups=*/1);
  const uint64_t gen = watch.connected(0, at(0));
  watch.connected(1, at(0));
  // Both step quickly: a batch, then our reply, 10 ms apart.
  for (int i = 0; i < 10; ++i) {
    watch.batch_received(0, at(i * 0.02 + 0.01));
    watch.replied(0, gen, at(i * 0.02 + 0.02));
  }
  watch.batch_received(1, at(0.01));  // actor 1's batch waits on the learner: it owes nothing
  EXPECT_TRUE(watch.silent(at(5), 30).empty());
  const auto hung = watch.silent(at(31), 30);
  ASSERT_EQ(hung.size(), 1u);
  EXPECT_EQ(hung[0].actor_id, 0);
  EXPECT_NEAR(hung[0].silent_s, 31 - 0.2, 1e-6);
  EXPECT_DOUBLE_EQ(hung[0].timeout_s, 30);
}

TEST(ActorWatch, ASlowEnvGetsManyOfItsStepTimesBeforeItCountsAsHung) {
  ActorWatch watch(1, 1);
  const uint64_t gen = watch.connected(0, at(0));
  double t = 0;
  for (int i = 0; i < 20; ++i) {  // 10 s per step, 1 ms inference
    t += 10;
    watch.batch_received(0, at(t));
    t += 0.001;
    watch.replied(0, gen, at(t));
  }
  EXPECT_TRUE(watch.silent(at(t + 100), 30).empty()) << "100 s is 10 of its steps";
  const auto hung = watch.silent(at(t + 201), 30);
  ASSERT_EQ(hung.size(), 1u);
  EXPECT_NEAR(hung[0].timeout_s, ActorWatch::kStepMultiple * 10, 1);
}

TEST(ActorWatch, AnActorWithOneGroupWaitingStillOwesTheOther) {
  ActorWatch watch(1, 2);
  const uint64_t gen = watch.connected(0, at(0));
  watch.batch_received(0, at(0.01));
  watch.batch_received(0, at(0.02));
  EXPECT_TRUE(watch.silent(at(100), 30).empty()) << "both groups wait on the learner";
  watch.replied(0, gen, at(100));
  EXPECT_TRUE(watch.silent(at(120), 30).empty());
  EXPECT_EQ(watch.silent(at(131), 30).size(), 1u) << "one group is back with the actor, which says nothing";
}

TEST(ActorWatch, RepliesToAnOlderConnectionDoNotCountForTheNewOne) {
  ActorWatch watch(1, 1);
  const uint64_t old_gen = watch.connected(0, at(0));
  watch.batch_received(0, at(1));
  watch.disconnected(0);
  EXPECT_TRUE(watch.silent(at(1000), 30).empty()) << "not connected";
  const uint64_t new_gen = watch.connected(0, at(1000));
  EXPECT_NE(new_gen, old_gen);
  watch.batch_received(0, at(1001));
  watch.replied(0, old_gen, at(1001));  // the old request, answered late: ignored
  EXPECT_TRUE(watch.silent(at(1100), 30).empty()) << "its batch still waits on the learner";
  watch.replied(0, new_gen, at(1100));
  EXPECT_EQ(watch.silent(at(1131), 30).size(), 1u);
}

TEST(ActorWatch, AnActorThatNeverSendsItsFirstBatchIsHungAfterTheFloor) {
  ActorWatch watch(1, 2);
  watch.connected(0, at(0));
  EXPECT_TRUE(watch.silent(at(29), 30).empty());
  EXPECT_EQ(watch.silent(at(31), 30).size(), 1u);
  EXPECT_TRUE(watch.silent(at(31), 0).empty()) << "a floor of 0 turns detection off";
}

TEST(ActorWatch, CountsEveryBatchOfASlotAcrossConnections) {
  ActorWatch watch(2, 1);
  watch.connected(1, at(0));
  watch.batch_received(1, at(1));
  watch.connected(1, at(2));
  watch.batch_received(1, at(3));
  EXPECT_EQ(watch.batches(1), 2u);
  EXPECT_EQ(watch.batches(0), 0u);
  EXPECT_THROW(watch.batches(2), std::out_of_range);
}

}  // namespace
}  // namespace moonseed::engine
