#include "rpc/guards.h"

#include <algorithm>

namespace moonseed::rpc::detail {

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
  auto found = by_peer_.find(peer);
  if (found == by_peer_.end() || found->second->blocked_until <= now) return std::chrono::milliseconds(0);
  // Rounded up: a refusal never says "0 ms" while it still refuses.
  return std::chrono::ceil<std::chrono::milliseconds>(found->second->blocked_until - now);
}

void AuthThrottle::failed(const std::string& peer, SteadyTime now) {
  base::MutexLock lock(mu_);
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
  if (over <= 0) return;
  std::chrono::milliseconds block = options_.block_first;
  for (int i = 1; i < over && block < options_.block_max; ++i) block *= 2;
  record.blocked_until = now + std::min(block, options_.block_max);
}

void AuthThrottle::succeeded(const std::string& peer) {
  base::MutexLock lock(mu_);
  auto found = by_peer_.find(peer);
  if (found == by_peer_.end()) return;
  records_.erase(found->second);
  by_peer_.erase(found);
}

size_t AuthThrottle::peers() const {
  base::MutexLock lock(mu_);
  return records_.size();
}

}  // namespace moonseed::rpc::detail
