#include "engine/runtime/rate_limiter.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "base/text.h"

namespace moonseed::engine {
namespace {

// now + timeout, saturating at the end of time (a timeout of
// milliseconds::max() would overflow nanoseconds).
Clock::time_point deadline_after(Clock::time_point now, std::chrono::milliseconds timeout) {
  timeout = std::max(timeout, std::chrono::milliseconds(0));
  if (timeout >= std::chrono::duration_cast<std::chrono::milliseconds>(Clock::time_point::max() - now)) {
    return Clock::time_point::max();
  }
  return now + std::chrono::duration_cast<Clock::duration>(timeout);
}

}  // namespace

void validate(const RateLimiterConfig& config) {
  if (!std::isfinite(config.samples_per_insert) || config.samples_per_insert < 0) {
    throw std::invalid_argument("RateLimiter: samples_per_insert must be finite and >= 0, got " +
                                base::number_text(config.samples_per_insert));
  }
  if (config.min_size_to_sample < 1) {
    throw std::invalid_argument("RateLimiter: min_size_to_sample must be >= 1, got " +
                                std::to_string(config.min_size_to_sample));
  }
  const double least = std::max(1.0, config.samples_per_insert);
  if (!std::isfinite(config.error_buffer) || config.error_buffer < least) {
    throw std::invalid_argument("RateLimiter: error_buffer must be >= max(1, samples_per_insert) = " +
                                base::number_text(least) + ", got " + base::number_text(config.error_buffer));
  }
}

RateLimiter::RateLimiter(const RateLimiterConfig& config, Clock* clock)
    : config_((validate(config), config)),
      own_clock_(clock == nullptr ? std::make_unique<SteadyClock>() : nullptr),
      clock_(clock == nullptr ? *own_clock_ : *clock) {}

bool RateLimiter::can_insert(int64_t n) const {
  const double spi = config_.samples_per_insert;
  if (spi == 0 || inserts_ < config_.min_size_to_sample) return true;
  const double d = static_cast<double>(inserts_ - config_.min_size_to_sample) * spi -
                   static_cast<double>(samples_);
  return d + static_cast<double>(n) * spi <= config_.error_buffer;
}

bool RateLimiter::can_sample(int64_t n) const {
  if (inserts_ < config_.min_size_to_sample) return false;
  const double spi = config_.samples_per_insert;
  if (spi == 0) return true;
  const double d = static_cast<double>(inserts_ - config_.min_size_to_sample) * spi -
                   static_cast<double>(samples_);
  return d - static_cast<double>(n) >= -config_.error_buffer;
}

template <typename Allowed>
bool RateLimiter::await(Side side, std::chrono::milliseconds timeout, Allowed allowed) {
  base::CondVar& cv = side == Side::kInsert ? insert_cv_ : sample_cv_;
  base::MutexLock lock(mu_);
  if (cancelled_) return false;
  if (allowed()) return true;
  const Clock::time_point start = clock_.now();
  const bool granted = clock_.wait_until(lock, cv, deadline_after(start, timeout),
                                         [&]() REQUIRES(mu_) { return cancelled_ || allowed(); }) &&
                       !cancelled_;
  (side == Side::kInsert ? insert_blocked_ : sample_blocked_) += clock_.now() - start;
  return granted;
}

bool RateLimiter::await_insert(int64_t n, std::chrono::milliseconds timeout) {
  if (n < 1 || static_cast<double>(n) * config_.samples_per_insert > config_.error_buffer) {
    throw std::invalid_argument("RateLimiter::await_insert: n = " + std::to_string(n) +
                                " must be >= 1 with n * samples_per_insert <= error_buffer = " +
                                base::number_text(config_.error_buffer));
  }
  return await(Side::kInsert, timeout, [&]() REQUIRES(mu_) { return can_insert(n); });
}

bool RateLimiter::await_sample(int64_t n, std::chrono::milliseconds timeout) {
  if (n < 1 || (config_.samples_per_insert > 0 && static_cast<double>(n) > config_.error_buffer)) {
    throw std::invalid_argument("RateLimiter::await_sample: n = " + std::to_string(n) +
                                " must be >= 1 and <= error_buffer = " + base::number_text(config_.error_buffer));
  }
  return await(Side::kSample, timeout, [&]() REQUIRES(mu_) { return can_sample(n); });
}

void RateLimiter::inserted(int64_t n) {
  if (n < 0) {
    throw std::invalid_argument("RateLimiter::inserted: n = " + std::to_string(n) + " is negative");
  }
  {
    base::MutexLock guard(mu_);
    inserts_ += n;
  }
  sample_cv_.notify_all();
}

void RateLimiter::sampled(int64_t n) {
  if (n < 0) {
    throw std::invalid_argument("RateLimiter::sampled: n = " + std::to_string(n) + " is negative");
  }
  {
    base::MutexLock guard(mu_);
    samples_ += n;
  }
  insert_cv_.notify_all();
}

void RateLimiter::cancel() {
  {
    base::MutexLock guard(mu_);
    cancelled_ = true;
  }
  insert_cv_.notify_all();
  sample_cv_.notify_all();
}

bool RateLimiter::cancelled() const {
  base::MutexLock guard(mu_);
  return cancelled_;
}

RateLimiterStats RateLimiter::stats() const {
  base::MutexLock guard(mu_);
  RateLimiterStats s;
  s.inserts = inserts_;
  s.samples = samples_;
  s.insert_blocked = insert_blocked_;
  s.sample_blocked = sample_blocked_;
  return s;
}

RateLimiterCounters RateLimiter::counters() const {
  base::MutexLock guard(mu_);
  return {inserts_, samples_};
}

void RateLimiter::restore(const RateLimiterCounters& counters) {
  if (counters.inserts < 0 || counters.samples < 0) {
    throw std::invalid_argument("RateLimiter::restore: counters must be >= 0, got inserts " +
                                std::to_string(counters.inserts) + ", samples " +
                                std::to_string(counters.samples));
  }
  {
    base::MutexLock guard(mu_);
    inserts_ = counters.inserts;
    samples_ = counters.samples;
  }
  insert_cv_.notify_all();
  sample_cv_.notify_all();
}

}  // namespace moonseed::engine
