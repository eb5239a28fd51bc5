// What a local actor's end means and what is done about it, as plain values (local_actors.h):
// a wait() status read as a Death and said in words, RestartPolicy's schedule, and the slots
// summed for the progress line. No processes, no clock: tests drive them directly.
#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>
#include <string>

#include "cli/engine/local_actors.h"

namespace moonseed::cli {
namespace {

// "SIGSEGV, Segmentation fault" (a signal's name, then its description).
std::string signal_text(int sig) {
  const char* abbrev = ::sigabbrev_np(sig);
  return (abbrev ? "SIG" + std::string(abbrev) : std::to_string(sig)) + ", " + ::strsignal(sig);
}

}  // namespace

Death death_of_status(int status) {
  Death d;
  if (WIFEXITED(status)) {
    d.code = WEXITSTATUS(status);
    d.cause = d.code == 0 ? Death::Cause::kExitedZero : Death::Cause::kExited;
  } else if (WIFSIGNALED(status)) {
    d.code = WTERMSIG(status);
    const bool crash = d.code == SIGSEGV || d.code == SIGBUS || d.code == SIGILL || d.code == SIGFPE ||
                       d.code == SIGABRT;
    d.cause = crash ? Death::Cause::kCrashed : Death::Cause::kSignaled;
  }
  return d;
}

std::string describe(const Death& death) {
  switch (death.cause) {
    case Death::Cause::kExited: return "exited with code " + std::to_string(death.code);
    case Death::Cause::kExitedZero: return "exited on its own with code 0";
    case Death::Cause::kCrashed: return "crashed (" + signal_text(death.code) + ")";
    case Death::Cause::kSignaled: return "killed by signal (" + signal_text(death.code) + ")";
    case Death::Cause::kHung: return "hung: " + death.detail;
    case Death::Cause::kMemory: return "killed for memory: " + death.detail;
  }
  return "ended";
}

RestartPolicy::RestartPolicy(int slots, RestartRules rules)
    : rules_(rules), deaths_(static_cast<size_t>(slots)), early_deaths_(static_cast<size_t>(slots), 0) {}

int RestartPolicy::free_restarts() const {
  constexpr int kWithoutParking = 5;  // deaths_to_park = 0 still backs off a slot that keeps dying
  return rules_.deaths_to_park > 0 ? std::max(1, rules_.deaths_to_park / 2) : kWithoutParking;
}

RestartPolicy::Decision RestartPolicy::on_exit(int id, bool worked, double now_s) {
  std::deque<double>& deaths = deaths_.at(static_cast<size_t>(id));
  int& early = early_deaths_.at(static_cast<size_t>(id));
  deaths.push_back(now_s);
  while (!deaths.empty() && deaths.front() <= now_s - rules_.window_s) deaths.pop_front();
  early = worked ? 0 : early + 1;  // it did its job until it died: the run of early deaths is over
  Decision d;
  d.deaths_in_window = static_cast<int>(deaths.size());
  d.early_deaths = early;
  if ((rules_.deaths_to_park > 0 && d.deaths_in_window >= rules_.deaths_to_park) ||
      (rules_.early_deaths_to_park > 0 && early >= rules_.early_deaths_to_park)) {
    d.park = true;
    return d;
  }
  // The n-th delayed restart waits first_backoff_s * 2^(n-1): counted from the first early
  // death, or from the first death past the free ones in the window, whichever is further.
  const int delayed = std::max(early, d.deaths_in_window - free_restarts());
  if (delayed > 0) {
    d.delay_s = std::min(rules_.max_backoff_s, rules_.first_backoff_s * static_cast<double>(1 << std::min(delayed - 1, 20)));
  }
  return d;
}

const char* state_name(SlotState::State state) {
  switch (state) {
    case SlotState::State::kRunning: return "running";
    case SlotState::State::kBackingOff: return "backing off";
    case SlotState::State::kParked: return "parked";
    case SlotState::State::kStopped: return "stopped";
  }
  return "?";
}

SlotCounts count_slots(const std::vector<SlotState>& slots) {
  SlotCounts c;
  for (const SlotState& s : slots) {
    c.deaths += s.deaths;
    c.hung += s.hung;
    if (s.state == SlotState::State::kRunning) ++c.running;
    if (s.state == SlotState::State::kParked) ++c.parked;
    if (s.state == SlotState::State::kBackingOff) {
      c.next_restart_in_s = c.backing_off == 0 ? s.restart_in_s : std::min(c.next_restart_in_s, s.restart_in_s);
      ++c.backing_off;
    }
  }
  return c;
}

std::string slot_note(const SlotCounts& c) {
  if (c.backing_off == 0 && c.parked == 0 && c.hung == 0) return "";
  std::ostringstream out;
  out << " (" << c.backing_off << " backing off";
  if (c.backing_off > 0) out << " " << std::ceil(c.next_restart_in_s) << " s";
  out << ", " << c.parked << " parked";
  if (c.hung > 0) out << ", " << c.hung << " hung";
  out << ")";
  return out.str();
}

}  // namespace moonseed::cli
