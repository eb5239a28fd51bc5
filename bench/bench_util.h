// What the benches under bench/ share: timing a call over a slice of time or
// once, the fastest (or median) of several rounds, and short text for durations and rates.
// Benches alternate the variants they compare in slices and keep each one's
// fastest slice, since noise from other processes only ever adds time.
//
// Contract: header-only; no state. time_calls() and per_call() call `f` at
// least one chunk's worth of times, so a slice shorter than one call still
// measures one; fastest() and median() need a non-empty vector. Nothing throws but `f`.
// Thread-safety: reentrant; timing from several threads at once measures contention.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace moonseed::bench {

using Clock = std::chrono::steady_clock;

// How many calls a slice made and how long they took.
struct Timing {
  int64_t calls = 0;
  double seconds = 0;
};

// Calls f in chunks of `chunk` (so reading the clock costs little) until `seconds` have passed.
template <typename F>
Timing time_calls(double seconds, int64_t chunk, F&& f) {
  const auto start = Clock::now();
  const auto stop = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  int64_t calls = 0;
  auto now = start;
  do {
    for (int64_t i = 0; i < chunk; ++i) f();
    calls += chunk;
    now = Clock::now();
  } while (now < stop);
  return {calls, std::chrono::duration<double>(now - start).count()};
}

// Seconds per call of f, over a slice of `seconds` (see time_calls).
template <typename F>
double per_call(double seconds, int64_t chunk, F&& f) {
  const Timing t = time_calls(seconds, chunk, f);
  return t.seconds / static_cast<double>(t.calls);
}

// Seconds one call of f takes.
template <typename F>
double seconds_of(F&& f) {
  const auto start = Clock::now();
  f();
  return std::chrono::duration<double>(Clock::now() - start).count();
}

inline double fastest(const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); }

// The middle value (the mean of the two middle ones for an even count); needs a non-empty vector.
inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// "1.50 s", "2.25 ms", "7.10 us", "112 ns".
inline std::string duration_text(double seconds) {
  char buf[32];
  if (seconds >= 1) {
    std::snprintf(buf, sizeof buf, "%.2f s", seconds);
  } else if (seconds >= 1e-3) {
    std::snprintf(buf, sizeof buf, "%.2f ms", seconds * 1e3);
  } else if (seconds >= 1e-6) {
    std::snprintf(buf, sizeof buf, "%.2f us", seconds * 1e6);
  } else {
    std::snprintf(buf, sizeof buf, "%.0f ns", seconds * 1e9);
  }
  return buf;
}

// "8.94M", "145.8k", "425.4" (per second; the caller adds the unit).
inline std::string rate_text(double per_second) {
  char buf[32];
  if (per_second >= 1e6) {
    std::snprintf(buf, sizeof buf, "%.2fM", per_second / 1e6);
  } else if (per_second >= 1e4) {
    std::snprintf(buf, sizeof buf, "%.1fk", per_second / 1e3);
  } else {
    std::snprintf(buf, sizeof buf, "%.1f", per_second);
  }
  return buf;
}

}  // namespace moonseed::bench
