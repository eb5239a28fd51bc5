// RateLimiter: keeps the learner's sampling from a replay and the actors'
// inserting into it at a fixed samples-per-insert ratio (SPI), in the manner of
// Reverb's SampleToInsertRatio, so that training neither starves (sampling the
// same few sequences over and over) nor races ahead of acting.
//
// The rule. With I inserts and S samples accounted so far, M =
// min_size_to_sample and E = error_buffer, let
//     d = (I - M) * SPI - S
// be how many samples the inserts have paid for but nobody took, counted from
// the moment sampling opens (I = M). The target is d = 0, and
//   - await_sample(n) may go once I >= M and d - n >= -E: sampling waits for
//     the first M inserts, then may run at most E samples ahead of the inserts;
//   - await_insert(n) may go while I < M (filling), or once d + n * SPI <= E:
//     inserting may run at most E samples' worth ahead of the samples.
// SPI = 0 turns the ratio off: inserting never waits and sampling waits only
// for the first M inserts. Counting from I = M (not from 0) matters: with
// SPI = 8 and M = 1000 the learner would otherwise have to draw 8000 samples
// from the first 1000 sequences before the actors could insert again.
//
// No deadlock. A request asks for n >= 1 items, with n * SPI <= E to insert and
// n <= E to sample (checked; E >= max(1, SPI) makes single items always
// legal). While I < M inserting never waits, so the inserter fills. After
// that, suppose an inserter asking n_i and a sampler asking n_s both wait:
// then d > E - n_i * SPI and d < n_s - E, so n_i * SPI + n_s > 2E, which the
// bounds on n exclude. More: a waiting side is always released by the other's
// progress. An inserter waits while d > E - n_i * SPI >= 0; the sampler then
// has d - n_s > -E and may sample, each sample lowers d by 1, and it can only
// come to wait at d < n_s - E <= 0 <= E - n_i * SPI, where the inserter may go.
// Symmetrically for a waiting sampler. So a side waits forever only when the
// other side stops (or never starts), and then the timeout or cancel() ends
// the wait. Restoring counters saved under another SPI may put d outside
// [-E, E]; the same argument holds from there.
//
// Accounting is separate from waiting: await_*() only waits for permission,
// and the caller reports what it actually did with inserted() / sampled()
// (an insert may fail after the wait). With one inserting and one sampling
// thread the bounds above hold exactly; k threads on one side that pass their
// waits together may overshoot by up to k - 1 of their requests.
//
// Errors: a bad config or request is std::invalid_argument naming the value.
// A timeout or cancel() is an expected outcome: await_*() returns false.
// Thread-safety: every member may be called from any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>

#include "base/mutex.h"
#include "engine/runtime/clock.h"

namespace moonseed::engine {

struct RateLimiterConfig {
  double samples_per_insert = 0;  // SPI > 0, or 0 for no ratio
  int64_t min_size_to_sample = 1;  // inserts before the first sample, >= 1
  double error_buffer = 1;         // E, in samples; >= max(1, SPI)
};

// Throws std::invalid_argument naming the offending field and value.
void validate(const RateLimiterConfig& config);

// What a checkpoint carries.
struct RateLimiterCounters {
  int64_t inserts = 0;
  int64_t samples = 0;
};

struct RateLimiterStats {
  int64_t inserts = 0;
  int64_t samples = 0;
  // Total time await_insert / await_sample callers spent waiting, timeouts included.
  Clock::duration insert_blocked{0};
  Clock::duration sample_blocked{0};
};

class RateLimiter {
 public:
  // `clock` (not owned, must outlive the limiter) measures timeouts and blocked
  // time; nullptr means the steady clock.
  explicit RateLimiter(const RateLimiterConfig& config, Clock* clock = nullptr);
  RateLimiter(const RateLimiter&) = delete;
  RateLimiter& operator=(const RateLimiter&) = delete;

  const RateLimiterConfig& config() const { return config_; }

  // Wait until inserting (sampling) n items is allowed, then return true; return
  // false when `timeout` passes first or the limiter is cancelled. Nothing is
  // accounted. Throw std::invalid_argument for n < 1, or for a request that
  // could never be granted (see the bounds above).
  bool await_insert(int64_t n, std::chrono::milliseconds timeout) EXCLUDES(mu_);
  bool await_sample(int64_t n, std::chrono::milliseconds timeout) EXCLUDES(mu_);

  // Account n items inserted (sampled) and wake the other side. n >= 0.
  void inserted(int64_t n) EXCLUDES(mu_);
  void sampled(int64_t n) EXCLUDES(mu_);

  // Wakes every waiter; from now on every await_*() returns false at once.
  // Used at shutdown. Accounting still works.
  void cancel() EXCLUDES(mu_);
  bool cancelled() const EXCLUDES(mu_);

  RateLimiterStats stats() const EXCLUDES(mu_);
  RateLimiterCounters counters() const EXCLUDES(mu_);
  // Replaces the counters (loading a checkpoint) and wakes every waiter.
  void restore(const RateLimiterCounters& counters) EXCLUDES(mu_);

 private:
  enum class Side { kInsert, kSample };

  bool can_insert(int64_t n) const REQUIRES(mu_);
  bool can_sample(int64_t n) const REQUIRES(mu_);
  // Waits on `side`'s condition variable until `allowed()` (called under mu_)
  // or the deadline; adds the time spent to `side`'s blocked time.
  template <typename Allowed>
  bool await(Side side, std::chrono::milliseconds timeout, Allowed allowed) EXCLUDES(mu_);

  const RateLimiterConfig config_;
  std::unique_ptr<Clock> own_clock_;  // set when no clock was given
  Clock& clock_;

  mutable base::Mutex mu_;
  base::CondVar insert_cv_;  // waiters of await_insert
  base::CondVar sample_cv_;  // waiters of await_sample
  int64_t inserts_ GUARDED_BY(mu_) = 0;
  int64_t samples_ GUARDED_BY(mu_) = 0;
  bool cancelled_ GUARDED_BY(mu_) = false;
  Clock::duration insert_blocked_ GUARDED_BY(mu_){0};
  Clock::duration sample_blocked_ GUARDED_BY(mu_){0};
};

}  // namespace moonseed::engine
