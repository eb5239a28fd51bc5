// Two small guards the server uses against hostile or broken peers. Internal
// to rpc/ (server.cc, session.cc) and its tests.
//
// LogThrottle: a warning that a peer can cause at will (accept failing for
// lack of descriptors, connections over the cap, Hellos from a blocked
// address) is logged at most once per interval: the first at once, the next
// one no sooner than `interval` later, saying how many were not logged since.
//
// AuthThrottle: remembers, per peer address, Hellos refused for a wrong auth
// token. Once it has `free_failures` of them, Hellos from that address are
// refused without a check for `block_first`; each further failure (one per
// block at most) doubles that, up to `block_max`. An accepted Hello from the address, or `forget_after` without
// a failure, clears its record. At most `max_peers` addresses are kept; the
// one that failed longest ago is dropped first.
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <list>
#include <string>
#include <string_view>
#include <unordered_map>

#include "base/log.h"
#include "base/mutex.h"

namespace moonseed::rpc::detail {

using SteadyTime = std::chrono::steady_clock::time_point;

class LogThrottle {
 public:
  LogThrottle(base::Severity severity, std::chrono::milliseconds interval)
      : severity_(severity), interval_(interval) {}

  // One event described by `line`: logged now (true) or counted for the
  // next line (false).
  bool note(std::string_view line) EXCLUDES(mu_);
  // Events noted since the last line that were not logged.
  int64_t unlogged() const EXCLUDES(mu_);

 private:
  const base::Severity severity_;
  const std::chrono::milliseconds interval_;
  mutable base::Mutex mu_;
  bool logged_ GUARDED_BY(mu_) = false;
  SteadyTime last_ GUARDED_BY(mu_);
  int64_t unlogged_ GUARDED_BY(mu_) = 0;
};

struct AuthThrottleOptions {
  int free_failures = 3;
  std::chrono::milliseconds block_first{1000};
  std::chrono::milliseconds block_max{60000};
  std::chrono::milliseconds forget_after{600000};
  size_t max_peers = 1024;
};

class AuthThrottle {
 public:
  explicit AuthThrottle(const AuthThrottleOptions& options) : options_(options) {}

  // How long Hellos from `peer` are still refused at `now`; zero when not.
  std::chrono::milliseconds blocked_for(const std::string& peer, SteadyTime now) EXCLUDES(mu_);
  // A Hello from `peer` carried a wrong token.
  void failed(const std::string& peer, SteadyTime now) EXCLUDES(mu_);
  // A Hello from `peer` was admitted.
  void succeeded(const std::string& peer) EXCLUDES(mu_);
  size_t peers() const EXCLUDES(mu_);

 private:
  struct Record {
    std::string peer;
    int failures = 0;
    SteadyTime last_failure;
    SteadyTime blocked_until;
  };
  using Records = std::list<Record>;  // most recent failure first

  const AuthThrottleOptions options_;
  mutable base::Mutex mu_;
  Records records_ GUARDED_BY(mu_);
  std::unordered_map<std::string, Records::iterator> by_peer_ GUARDED_BY(mu_);
};

}  // namespace moonseed::rpc::detail
