#include "rpc/guards.h"

#include <gtest/gtest.h>

#include <algorithm>
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

AuthThrottleOptions budget_options() {
  AuthThrottleOptions o = options();
  o.free_failures = 1000;  // no address is blocked: only the global budget refuses
  o.max_peers = 10000;
  o.budget_per_s = 2;
  o.budget_burst = 5;
  o.summary_interval = milliseconds(10000);
  return o;
}

// Checks one Hello from `peer` that carries a wrong token; true when it was checked.
bool wrong_hello(AuthThrottle& throttle, const std::string& peer, SteadyTime now) {
  if (throttle.check(peer, now).verdict != AuthCheck::Verdict::kCheck) {
    throttle.note_refused(peer, now);
    return false;
  }
  throttle.failed(peer, now);
  return true;
}

TEST(AuthThrottle, AGlobalBudgetBoundsTheChecksFromAllAddressesTogether) {
  AuthThrottle throttle(budget_options());
  const SteadyTime t0{};
  ::testing::internal::CaptureStderr();
  int checked = 0;
  for (int p = 0; p < 1000; ++p) checked += wrong_hello(throttle, "10.0." + std::to_string(p) + ".1", t0);
  EXPECT_EQ(checked, 5) << "the burst";
  const AuthCheck refused = throttle.check("10.9.9.9", t0);
  EXPECT_EQ(refused.verdict, AuthCheck::Verdict::kBudgetSpent);
  EXPECT_EQ(refused.wait, milliseconds(500)) << "one check refills in 1/2 s";
  // Two a second refill it; never beyond the burst.
  checked = 0;
  for (int p = 0; p < 1000; ++p) checked += wrong_hello(throttle, "10.1." + std::to_string(p) + ".1", t0 + milliseconds(1000));
  EXPECT_EQ(checked, 2);
  checked = 0;
  for (int p = 0; p < 1000; ++p) checked += wrong_hello(throttle, "10.2." + std::to_string(p) + ".1", t0 + milliseconds(60000));
  EXPECT_EQ(checked, 5);
  ::testing::internal::GetCapturedStderr();
}

TEST(AuthThrottle, ACheckThatFindsNoWrongTokenGivesItsShareBack) {
  AuthThrottle throttle(budget_options());
  const SteadyTime t0{};
  for (int i = 0; i < 20; ++i) {
    const AuthCheck check = throttle.check("10.0.0." + std::to_string(i), t0);
    ASSERT_EQ(check.verdict, AuthCheck::Verdict::kCheck) << i;
    EXPECT_TRUE(check.from_budget);
    throttle.give_back();  // the right token, or refused for another reason
  }
  EXPECT_EQ(throttle.budget_left(t0), 5);
}

TEST(AuthThrottle, AnAdmittedAddressIsCheckedWhileTheBudgetIsSpent) {
  AuthThrottle throttle(budget_options());
  const SteadyTime t0{};
  ASSERT_EQ(throttle.check("10.0.0.1", t0).verdict, AuthCheck::Verdict::kCheck);
  throttle.give_back();
  throttle.succeeded("10.0.0.1");
  ::testing::internal::CaptureStderr();
  for (int p = 0; p < 100; ++p) wrong_hello(throttle, "10.1." + std::to_string(p) + ".1", t0);
  ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(throttle.check("10.2.0.1", t0).verdict, AuthCheck::Verdict::kBudgetSpent);
  const AuthCheck known = throttle.check("10.0.0.1", t0);
  EXPECT_EQ(known.verdict, AuthCheck::Verdict::kCheck);
  EXPECT_FALSE(known.from_budget);
}

TEST(AuthThrottle, RefusalsAreLoggedAsOneSummaryLinePerInterval) {
  AuthThrottleOptions o = budget_options();
  o.free_failures = 1;
  o.max_peers = 3;
  o.budget_per_s = 0.001;  // no refill within the test
  AuthThrottle throttle(o);
  const SteadyTime t0{};
  ::testing::internal::CaptureStderr();
  wrong_hello(throttle, "10.0.0.1", t0);  // the first: at once
  for (int i = 0; i < 4311; ++i) wrong_hello(throttle, "10.0." + std::to_string(i % 1100) + ".2", t0 + milliseconds(1));
  const std::string quiet = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(std::count(quiet.begin(), quiet.end(), '\n'), 1) << quiet;
  EXPECT_NE(quiet.find("refused 1 Hellos from 1 address in the last 0.0 s: 1 with a wrong auth token, 0 unchecked"),
            std::string::npos)
      << quiet;
  ::testing::internal::CaptureStderr();
  throttle.flush_summary(t0 + milliseconds(1000));
  const std::string summary = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(summary.find("refused 4,311 Hellos from 1,100 addresses in the last 1.0 s: 4 with a wrong auth token, "
                         "4,307 unchecked (now blocking: 3 addresses; global budget exhausted)"),
            std::string::npos)
      << summary;
}

}  // namespace
}  // namespace moonseed::rpc::detail
