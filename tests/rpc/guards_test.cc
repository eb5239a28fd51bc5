#include "rpc/guards.h"

#include <gtest/gtest.h>

#include <string>

namespace moonseed::rpc::detail {
namespace {

using std::chrono::milliseconds;

AuthThrottleOptions options() {
  AuthThrottleOptions o;
  o.free_failures = 3;
  o.block_first = milliseconds(1000);
  o.block_max = milliseconds(5000);
  o.forget_after = milliseconds(60000);
  o.max_peers = 4;
  return o;
}

TEST(AuthThrottle, BlocksFromTheFreeFailuresOnAndDoublesUpToTheMax) {
  AuthThrottle throttle(options());
  const SteadyTime t0{};
  throttle.failed("10.0.0.1", t0);
  throttle.failed("10.0.0.1", t0);
  EXPECT_EQ(throttle.blocked_for("10.0.0.1", t0).count(), 0);
  throttle.failed("10.0.0.1", t0);
  EXPECT_EQ(throttle.blocked_for("10.0.0.1", t0), milliseconds(1000));
  EXPECT_EQ(throttle.blocked_for("10.0.0.2", t0).count(), 0) << "another address";
  EXPECT_EQ(throttle.blocked_for("10.0.0.1", t0 + milliseconds(1000)).count(), 0);
  throttle.failed("10.0.0.1", t0 + milliseconds(1000));
  EXPECT_EQ(throttle.blocked_for("10.0.0.1", t0 + milliseconds(1000)), milliseconds(2000));
  throttle.failed("10.0.0.1", t0 + milliseconds(3000));
  throttle.failed("10.0.0.1", t0 + milliseconds(7000));
  EXPECT_EQ(throttle.blocked_for("10.0.0.1", t0 + milliseconds(7000)), milliseconds(5000)) << "capped";
}

TEST(AuthThrottle, SuccessOrAQuietSpellClearsAnAddress) {
  AuthThrottle throttle(options());
  const SteadyTime t0{};
  for (int i = 0; i < 3; ++i) throttle.failed("a", t0);
  throttle.succeeded("a");
  EXPECT_EQ(throttle.peers(), 0u);
  throttle.failed("a", t0);
  throttle.failed("a", t0);
  throttle.failed("a", t0 + milliseconds(61000));  // the first two are forgotten
  EXPECT_EQ(throttle.blocked_for("a", t0 + milliseconds(61000)).count(), 0);
}

TEST(AuthThrottle, KeepsAtMostMaxPeersDroppingTheOneThatFailedLongestAgo) {
  AuthThrottle throttle(options());
  const SteadyTime t0{};
  for (int i = 0; i < 3; ++i) throttle.failed("first", t0);
  for (int p = 0; p < 100; ++p) throttle.failed("peer-" + std::to_string(p), t0 + milliseconds(p));
  EXPECT_EQ(throttle.peers(), 4u);
  EXPECT_EQ(throttle.blocked_for("first", t0).count(), 0) << "dropped";
}

}  // namespace
}  // namespace moonseed::rpc::detail
