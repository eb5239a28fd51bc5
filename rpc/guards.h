// Two small guards against hostile or broken peers, used by the actor server
// (rpc/server.cc, session.cc), the dashboard's token check (dashboard/server.cc)
// and their tests.
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
// Beside the per-address record, a global budget of failed checks (a token
// bucket: `budget_per_s` refilled per second, at most `budget_burst` saved)
// bounds the guesses checked from all addresses together, however many there
// are. Each check of an address that has not succeeded before takes one from
// the budget (give_back() returns it unless the token was wrong); with the
// budget spent, such Hellos are refused unchecked until it refills. Addresses
// that were admitted (the last `max_trusted` of them) are checked regardless.
// Refusals are logged as summaries (note_refused, failed): the first at once,
// then at most one line per `summary_interval`, counting the refusals, their
// addresses and the blocks in force; flush_summary() logs what is left.
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
#include <unordered_set>

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
  double budget_per_s = 10;  // failed checks per second, from all addresses together
  int budget_burst = 100;    // failed checks saved up
  size_t max_trusted = 1024;  // admitted addresses remembered (checked past a spent budget)
  std::chrono::milliseconds summary_interval{10000};
  std::string subject = "Hellos";    // what the summary says was refused
  std::string log_component = "rpc";  // the summary's log component
};

// Whether a credential from an address may be checked now.
struct AuthCheck {
  enum class Verdict { kCheck, kAddressBlocked, kBudgetSpent };
  Verdict verdict = Verdict::kCheck;
  std::chrono::milliseconds wait{0};  // refused: until it may be checked again (rounded up)
  bool from_budget = false;           // kCheck: took one check of the global budget
};

class AuthThrottle {
 public:
  explicit AuthThrottle(const AuthThrottleOptions& options) : options_(options) {}

  // How long Hellos from `peer` are still refused at `now`; zero when not.
  std::chrono::milliseconds blocked_for(const std::string& peer, SteadyTime now) EXCLUDES(mu_);
  // Before checking a credential from `peer`: the address's block first, then
  // the global budget (unless `peer` was admitted before). kCheck with
  // from_budget: one check is taken; give_back() it unless the check failed.
  AuthCheck check(const std::string& peer, SteadyTime now) EXCLUDES(mu_);
  // A check taken by check() that did not find a wrong token.
  void give_back() EXCLUDES(mu_);
  // A Hello from `peer` carried a wrong token (logged in the summary).
  void failed(const std::string& peer, SteadyTime now) EXCLUDES(mu_);
  // A Hello from `peer` was refused unchecked (logged in the summary).
  void note_refused(const std::string& peer, SteadyTime now) EXCLUDES(mu_);
  // A Hello from `peer` was admitted: its record goes, its address is trusted.
  void succeeded(const std::string& peer) EXCLUDES(mu_);
  // Logs the refusals not logged yet, if any (at shutdown).
  void flush_summary(SteadyTime now) EXCLUDES(mu_);
  size_t peers() const EXCLUDES(mu_);
  // Checks the global budget holds now (its whole checks).
  int64_t budget_left(SteadyTime now) EXCLUDES(mu_);

 private:
  struct Record {
    std::string peer;
    int failures = 0;
    SteadyTime last_failure;
    SteadyTime blocked_until;
  };
  using Records = std::list<Record>;  // most recent failure first
  // Refusals since the last summary line.
  struct Summary {
    int64_t wrong = 0;      // checked: a wrong token
    int64_t unchecked = 0;  // refused without a check
    std::unordered_set<std::string> addresses;  // at most kSummaryAddresses
    bool addresses_capped = false;
    SteadyTime since;  // the first refusal counted
  };
  static constexpr size_t kSummaryAddresses = 1 << 16;

  void refill(SteadyTime now) REQUIRES(mu_);
  std::string failed_locked(const std::string& peer, SteadyTime now) REQUIRES(mu_);
  std::chrono::milliseconds blocked_for_locked(const std::string& peer, SteadyTime now) REQUIRES(mu_);
  // Counts one refusal; the summary line when one is due ("" when not).
  std::string count_refusal(const std::string& peer, bool checked, SteadyTime now) REQUIRES(mu_);
  std::string summary_line(SteadyTime now) REQUIRES(mu_);
  void log(const std::string& line) const;

  const AuthThrottleOptions options_;
  mutable base::Mutex mu_;
  Records records_ GUARDED_BY(mu_);
  std::unordered_map<std::string, Records::iterator> by_peer_ GUARDED_BY(mu_);
  // The global budget.
  bool budget_started_ GUARDED_BY(mu_) = false;
  double budget_ GUARDED_BY(mu_) = 0;
  SteadyTime budget_time_ GUARDED_BY(mu_);
  // Admitted addresses, the most recent first.
  std::list<std::string> trusted_ GUARDED_BY(mu_);
  std::unordered_map<std::string, std::list<std::string>::iterator> trusted_at_ GUARDED_BY(mu_);
  Summary summary_ GUARDED_BY(mu_);
  bool summarized_ GUARDED_BY(mu_) = false;  // a line was logged
  SteadyTime last_summary_ GUARDED_BY(mu_);
};

}  // namespace moonseed::rpc::detail
