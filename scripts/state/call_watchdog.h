// A watchdog for calls into code that may never return and cannot be
// interrupted from inside: an actor's reward_shaping function runs JIT-compiled
// (LuaJIT calls no hooks from compiled code), so a `while true do end` would
// hang the actor silently. The caller brackets each call with begin()/end();
// a thread looks every limit/4 and, once one call has run longer than the
// limit, calls on_expired(what, limit_s) from that thread, once per call. The
// actor's callback prints a line naming the function and ends the process
// (docs/reward-shaping.md "Limits").
//
// begin()/end() take an uncontended lock each (tens of nanoseconds, once per
// group of envs per step) and allocate nothing once `what` fits.
//
// Thread-safety: begin()/end() from one thread at a time; on_expired runs on
// the watchdog's thread, outside its lock.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <thread>

#include "base/mutex.h"
#include "base/thread_annotations.h"

namespace moonseed::scripts {

class CallWatchdog {
 public:
  using Expired = std::function<void(const std::string& what, double limit_s)>;

  // limit_s > 0.
  CallWatchdog(double limit_s, Expired on_expired);
  ~CallWatchdog();
  CallWatchdog(const CallWatchdog&) = delete;
  CallWatchdog& operator=(const CallWatchdog&) = delete;

  // A call to `what` ("reward_shaping at exp.lua:12") starts now.
  void begin(const std::string& what) EXCLUDES(mu_);
  // The call returned.
  void end() EXCLUDES(mu_);

  double limit_s() const { return limit_s_; }

 private:
  void watch() EXCLUDES(mu_);

  const double limit_s_;
  const Expired on_expired_;
  base::Mutex mu_;
  base::CondVar wake_;
  bool in_call_ GUARDED_BY(mu_) = false;
  bool reported_ GUARDED_BY(mu_) = false;  // this call's expiry was reported
  std::chrono::steady_clock::time_point started_ GUARDED_BY(mu_);
  std::string what_ GUARDED_BY(mu_);
  bool stop_ GUARDED_BY(mu_) = false;
  std::thread thread_;  // last: starts once the rest exists
};

}  // namespace moonseed::scripts
