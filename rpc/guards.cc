#include "rpc/guards.h"

#include <algorithm>
#include <cstdio>

namespace moonseed::rpc::detail {
namespace {

// 4312 -> "4,312".
std::string grouped(int64_t n) {
  std::string digits = std::to_string(n);
  for (int at = static_cast<int>(digits.size()) - 3; at > (n < 0 ? 1 : 0); at -= 3) digits.insert(at, ",");
  return digits;
}

std::string counted(int64_t n, const char* one, const char* many) { return grouped(n) + " " + (n == 1 ? one : many); }

}  // namespace

bool LogThrottle::note(std::string_view line) {
  const SteadyTime now = std::chrono::steady_clock::now();
  int64_t unlogged = 0;
  {
    base::MutexLock lock(mu_);
    if (logged_ && now - last_ < interval_) {
      ++unlogged_;
      return false;
    }
    logged_ = true;
    last_ = now;
    unlogged = unlogged_;
    unlogged_ = 0;
  }
  std::string text(line);
  if (unlogged > 0) {
    text += " (" + std::to_string(unlogged) + " more like it since the last such line, not logged)";
  }
  base::log(severity_, "rpc", text);
  return true;
}

int64_t LogThrottle::unlogged() const {
  base::MutexLock lock(mu_);
  return unlogged_;
}

std::chrono::milliseconds AuthThrottle::blocked_for(const std::string& peer, SteadyTime now) {
  base::MutexLock lock(mu_);
  return blocked_for_locked(peer, now);
}

std::chrono::milliseconds AuthThrottle::blocked_for_locked(const std::string& peer, SteadyTime now) {
  auto found = by_peer_.find(peer);
  if (found == by_peer_.end() || found->second->blocked_until <= now) return std::chrono::milliseconds(0);
  // Rounded up: a refusal never says "0 ms" while it still refuses.
  return std::chrono::ceil<std::chrono::milliseconds>(found->second->blocked_until - now);
}

void AuthThrottle::refill(SteadyTime now) {
  if (!budget_started_) {
    budget_started_ = true;
    budget_ = options_.budget_burst;
    budget_time_ = now;
    return;
  }
  if (now <= budget_time_) return;
  const double seconds = std::chrono::duration<double>(now - budget_time_).count();
  budget_ = std::min<double>(options_.budget_burst, budget_ + seconds * options_.budget_per_s);
  budget_time_ = now;
}

AuthCheck AuthThrottle::check(const std::string& peer, SteadyTime now) {
  base::MutexLock lock(mu_);
  AuthCheck out;
  out.wait = blocked_for_locked(peer, now);
  if (out.wait.count() > 0) {
    out.verdict = AuthCheck::Verdict::kAddressBlocked;
    return out;
  }
  if (options_.budget_per_s <= 0 || trusted_at_.count(peer) > 0) return out;
  refill(now);
  if (budget_ >= 1) {
    budget_ -= 1;
    out.from_budget = true;
    return out;
  }
  out.verdict = AuthCheck::Verdict::kBudgetSpent;
  out.wait = std::chrono::ceil<std::chrono::milliseconds>(
      std::chrono::duration<double>((1 - budget_) / options_.budget_per_s));
  return out;
}

void AuthThrottle::give_back() {
  base::MutexLock lock(mu_);
  budget_ = std::min<double>(options_.budget_burst, budget_ + 1);
}

int64_t AuthThrottle::budget_left(SteadyTime now) {
  base::MutexLock lock(mu_);
  refill(now);
  return static_cast<int64_t>(budget_);
}

void AuthThrottle::note_refused(const std::string& peer, SteadyTime now) {
  std::string line;
  {
    base::MutexLock lock(mu_);
    line = count_refusal(peer, /*checked=*/false, now);
  }
  log(line);
}

std::string AuthThrottle::count_refusal(const std::string& peer, bool checked, SteadyTime now) {
  if (summary_.wrong + summary_.unchecked == 0) summary_.since = now;
  ++(checked ? summary_.wrong : summary_.unchecked);
  if (summary_.addresses.size() < kSummaryAddresses) {
    summary_.addresses.insert(peer);
  } else if (summary_.addresses.count(peer) == 0) {
    summary_.addresses_capped = true;
  }
  if (summarized_ && now - last_summary_ < options_.summary_interval) return "";
  return summary_line(now);
}

std::string AuthThrottle::summary_line(SteadyTime now) {
  const double seconds = std::chrono::duration<double>(now - summary_.since).count();
  char span[32];
  std::snprintf(span, sizeof span, seconds < 10 ? "%.1f s" : "%.0f s", seconds);
  size_t blocking = 0;
  for (const Record& record : records_) blocking += record.blocked_until > now ? 1 : 0;
  std::string budget = "global budget not used";
  if (options_.budget_per_s > 0 && budget_started_) {
    refill(now);
    budget = budget_ >= 1 ? "global budget: " + grouped(static_cast<int64_t>(budget_)) + " of " +
                                grouped(options_.budget_burst) + " failed checks left"
                          : "global budget exhausted";
  }
  std::string line = "refused " + grouped(summary_.wrong + summary_.unchecked) + " " + options_.subject +
                     " from " + (summary_.addresses_capped ? "more than " : "") +
                     counted(static_cast<int64_t>(summary_.addresses.size()), "address", "addresses") +
                     " in the last " + span + ": " + grouped(summary_.wrong) + " with a wrong auth token, " +
                     grouped(summary_.unchecked) + " unchecked (now blocking: " +
                     counted(static_cast<int64_t>(blocking), "address", "addresses") + "; " + budget + ")";
  summary_ = Summary{};
  summarized_ = true;
  last_summary_ = now;
  return line;
}

void AuthThrottle::log(const std::string& line) const {
  if (!line.empty()) base::log(base::Severity::kWarning, options_.log_component, line);
}

void AuthThrottle::flush_summary(SteadyTime now) {
  std::string line;
  {
    base::MutexLock lock(mu_);
    if (summary_.wrong + summary_.unchecked > 0) line = summary_line(now);
  }
  log(line);
}

void AuthThrottle::failed(const std::string& peer, SteadyTime now) {
  std::string line;
  {
    base::MutexLock lock(mu_);
    line = failed_locked(peer, now);
  }
  log(line);
}

std::string AuthThrottle::failed_locked(const std::string& peer, SteadyTime now) {
  auto found = by_peer_.find(peer);
  if (found == by_peer_.end()) {
    records_.push_front(Record{peer, 0, now, now});
    by_peer_[peer] = records_.begin();
    if (records_.size() > options_.max_peers) {
      by_peer_.erase(records_.back().peer);
      records_.pop_back();
    }
  } else {
    records_.splice(records_.begin(), records_, found->second);  // iterators stay valid
  }
  Record& record = records_.front();
  if (now - record.last_failure > options_.forget_after) record.failures = 0;
  record.last_failure = now;
  ++record.failures;
  // The free_failures-th failure starts the first block, each later one a longer one.
  const int over = record.failures - options_.free_failures + 1;
  if (over > 0) {
    std::chrono::milliseconds block = options_.block_first;
    for (int i = 1; i < over && block < options_.block_max; ++i) block *= 2;
    record.blocked_until = now + std::min(block, options_.block_max);
  }
  return count_refusal(peer, /*checked=*/true, now);
}

void AuthThrottle::succeeded(const std::string& peer) {
  base::MutexLock lock(mu_);
  if (auto found = by_peer_.find(peer); found != by_peer_.end()) {
    records_.erase(found->second);
    by_peer_.erase(found);
  }
  if (auto known = trusted_at_.find(peer); known != trusted_at_.end()) {
    trusted_.splice(trusted_.begin(), trusted_, known->second);
    return;
  }
  trusted_.push_front(peer);
  trusted_at_[peer] = trusted_.begin();
  if (trusted_.size() > options_.max_trusted) {
    trusted_at_.erase(trusted_.back());
    trusted_.pop_back();
  }
}

size_t AuthThrottle::peers() const {
  base::MutexLock lock(mu_);
  return records_.size();
}

}  // namespace moonseed::rpc::detail
