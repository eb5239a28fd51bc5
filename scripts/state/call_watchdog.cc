#include "scripts/state/call_watchdog.h"

#include <stdexcept>

namespace moonseed::scripts {

CallWatchdog::CallWatchdog(double limit_s, Expired on_expired)
    : limit_s_(limit_s), on_expired_(std::move(on_expired)) {
  if (!(limit_s > 0)) throw std::invalid_argument("CallWatchdog: the limit must be > 0 s");
  thread_ = std::thread([this] { watch(); });
}

CallWatchdog::~CallWatchdog() {
  {
    base::MutexLock lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void CallWatchdog::begin(const std::string& what) {
  base::MutexLock lock(mu_);
  if (what_ != what) what_ = what;
  started_ = std::chrono::steady_clock::now();
  in_call_ = true;
  reported_ = false;
}

void CallWatchdog::end() {
  base::MutexLock lock(mu_);
  in_call_ = false;
}

void CallWatchdog::watch() {
  const auto limit = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(limit_s_));
  base::MutexLock lock(mu_);
  while (!stop_) {
    wake_.wait_for(lock, limit / 4);
    if (stop_ || !in_call_ || reported_) continue;
    if (std::chrono::steady_clock::now() - started_ <= limit) continue;
    reported_ = true;
    const std::string what = what_;
    lock.unlock();
    on_expired_(what, limit_s_);
    lock.lock();
  }
}

}  // namespace moonseed::scripts
