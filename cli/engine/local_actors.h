// Local actor processes of `moonseed run`: started as `moonseed-actor`, each
// in its own process group (a terminal's Ctrl-C reaches only the learner,
// which then says Bye), killed with the learner if it dies
// (PR_SET_PDEATHSIG), and restarted when one dies while the run goes on.
//
// Deaths: every end of an actor that the run's own shutdown did not ask for
// counts, whatever it was (Death): an exit code, exit 0, a crash signal, a
// kill from outside, or a kill by the run itself (a hung actor; later one
// over its memory limit). Each is reaped the moment it happens and printed
// with the slot's env and the failure.
//
// Restarts (RestartPolicy, a pure function of the slot's deaths and a clock; actor_deaths.cc):
// every slot has its own schedule. The first half of `deaths_to_park` deaths
// within `window_s` restart at once (an occasional crash or kill -9 costs
// nothing); the next ones wait 1 s, doubling to max_backoff_s; the
// deaths_to_park-th within the window parks the slot. A slot whose actor
// never made progress (no env step beyond the reset one since it started)
// backs off from its first death and is parked after kEarlyDeathsToPark such
// deaths in a row. A parked slot is not restarted again; the run says why,
// quoting the end of its log.
//
// Logs stay bounded: the first death of a slot is printed in full (with the
// last line of its log), later ones in one short line each, and there are at
// most deaths_to_park of them per window.
//
// Memory (cli/engine/actor_memory.h): a watcher samples the kernel's OOM kill count;
// with memory_limit_bytes it also reads each running actor's memory (its process group's anonymous resident memory) every
// memory_check_s and kills an actor over the limit, whole process group, as a
// kMemory death. An actor that dies of a SIGKILL the run did not send while the
// kernel's OOM kill count rose was killed by the kernel for memory: also a
// kMemory death, said as such.
//
// Threads: a reaper (waitpid) records deaths and decides; a starter starts
// each slot when its time comes; a watcher samples memory. The public
// methods may be called from any thread.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <deque>
#include <utility>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "base/mutex.h"

namespace moonseed::cli {

// How a local actor's process ended, as its supervisor saw it.
struct Death {
  enum class Cause {
    kExited,      // exited on its own with a non-zero code (`code`)
    kExitedZero,  // exited on its own with code 0: an actor ends only when the learner says Bye
    kCrashed,     // a crash signal (`code`): SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT
    kSignaled,    // another signal (`code`), sent from outside: kill -9, the kernel's OOM killer
    kHung,        // killed by the run: it owed a step batch and said nothing (`detail`)
    kMemory,      // killed by the run: over its memory limit (`detail`); reserved for topology.actor_memory_mb
  };
  Cause cause = Cause::kExited;
  int code = 0;        // exit code or signal number
  std::string detail;  // kHung, kMemory: what the run saw, e.g. "no step batch for 5.2 s (timeout 5 s)"
};

// What a wait() status says, for a process the run did not kill.
Death death_of_status(int status);
// As lines print it: "exited with code 1", "exited on its own with code 0",
// "crashed (SIGSEGV, Segmentation fault)", "killed by signal (SIGKILL, Killed)",
// "hung: no step batch for 5.2 s (timeout 5 s)", "killed for memory: ...".
std::string describe(const Death& death);

// The rules of RestartPolicy.
struct RestartRules {
  double first_backoff_s = 1;  // the first delayed restart; doubles with each one after
  double max_backoff_s = 30;
  int deaths_to_park = 10;     // deaths within window_s that park a slot; 0: never park
  double window_s = 600;       // how far back deaths count
  // Deaths in a row of an actor that made no progress that park its slot; 0: never.
  int early_deaths_to_park = 5;
};

// What to do when a local actor's process ends: a pure function of the slot's
// history and the time given, so tests drive it without processes or clocks.
class RestartPolicy {
 public:
  RestartPolicy(int slots, RestartRules rules);

  struct Decision {
    bool park = false;         // give up on this slot
    double delay_s = 0;        // otherwise: restart after this long
    int deaths_in_window = 0;  // this one included
    int early_deaths = 0;      // in a row without progress, this one included (0: it made progress)
  };
  // Slot `id`'s process ended at `now_s` (any clock, never going back);
  // `worked`: it made progress (env steps beyond the reset) since it started.
  Decision on_exit(int id, bool worked, double now_s);

  // Deaths restarted at once in a window before the backoff begins.
  int free_restarts() const;
  const RestartRules& rules() const { return rules_; }

 private:
  const RestartRules rules_;
  std::vector<std::deque<double>> deaths_;  // per slot, the times within the window
  std::vector<int> early_deaths_;
};

// Local actors' oom_score_adj: the learner's plus kActorOomScoreAdjAbove, at
// most 1000, so that when memory runs out the kernel kills actors (which the
// run restarts) before the learner. own_oom_score_adj reads this process's.
constexpr int kActorOomScoreAdjAbove = 500;
int own_oom_score_adj();
int actor_oom_score_adj(int learner);

struct LocalActorsOptions {
  std::string binary;     // path of the moonseed-actor executable (actor_binary()), or of python3
  // Put between the binary and "--connect ADDRESS --actor-id N" (a Python actor's
  // "-m moonseed.actor --env MODULE:FUNCTION").
  std::vector<std::string> arguments;
  // NAME=VALUE set in the actors' environment on top of the learner's (PYTHONPATH).
  std::vector<std::string> environment;
  std::string address;    // learner address for --connect
  int count = 0;          // actor ids 0..count-1
  std::string log_dir;    // actor-N.log and actor-N.pid are written here
  // The env the actors run, as every line about a death names it (engine::env_text):
  // "plugin /abs/libcatch.so (env Catch-v0)", "Python env envs:make (env Maze-v0)", "env CartPole-v1".
  std::string env;
  RestartRules rules;
  // Env steps (resets excluded) actor `id` has sent the learner over the whole
  // run (Learner::actor_env_steps): one that sent any since it started made
  // progress. Null: every death counts as one without progress.
  std::function<uint64_t(int id)> env_steps;
  // topology.actor_memory_mb in bytes: an actor whose memory reaches it is
  // killed for memory (0: no limit); read every memory_check_s, which is also
  // how often the kernel's OOM kill count is sampled.
  int64_t memory_limit_bytes = 0;
  double memory_check_s = 0.25;
};

// One local actor slot now (LocalActors::slots).
struct SlotState {
  enum class State { kRunning, kBackingOff, kParked, kStopped };
  int id = 0;
  State state = State::kRunning;
  pid_t pid = -1;
  double restart_in_s = 0;   // kBackingOff: seconds until its restart
  int deaths = 0;            // over the run
  int deaths_in_window = 0;  // as of its last death
  int hung = 0;              // of its deaths, the run killed it as hung
  std::string last_death;    // describe() of its last death, "" = none
  int64_t memory_bytes = -1; // as the memory watcher last read it; -1 = not watched
};
const char* state_name(SlotState::State state);  // "running", "backing off", "parked", "stopped"

// The slots summed up, for the progress line and metrics rows.
struct SlotCounts {
  int running = 0;
  int backing_off = 0;
  double next_restart_in_s = 0;  // the soonest restart of a slot backing off
  int parked = 0;
  int deaths = 0;
  int hung = 0;
};
SlotCounts count_slots(const std::vector<SlotState>& slots);
// "" when no slot backs off, is parked or was killed as hung; else e.g.
// " (1 backing off 8 s, 1 parked, 3 hung)" for the progress line.
std::string slot_note(const SlotCounts& counts);

class LocalActors {
 public:
  explicit LocalActors(LocalActorsOptions options);
  ~LocalActors();  // shutdown(0)
  LocalActors(const LocalActors&) = delete;
  LocalActors& operator=(const LocalActors&) = delete;

  // Starts every actor and the supervisor threads.
  void start() EXCLUDES(mu_);
  // From now on an actor that exits is not restarted: the run is ending and
  // the learner is about to say Bye. shutdown() implies it.
  void stop_restarting() EXCLUDES(mu_);
  // Stops restarting actors, waits up to `grace_s` for them to exit on their
  // own (after the learner's Bye), then SIGKILLs the rest and reaps them.
  void shutdown(double grace_s) EXCLUDES(mu_);

  // SIGKILLs actor `id` for `why` (kHung, kMemory: its cause and detail are
  // what the death line says instead of the signal); its death counts and it
  // is restarted like any other. False when it is not running.
  bool kill(int id, Death why) EXCLUDES(mu_);

  int restarts() const EXCLUDES(mu_);
  // Pid of actor `id`, or -1 when it is not running.
  pid_t pid_of(int id) const EXCLUDES(mu_);
  // Every slot is parked (there is at least one).
  bool all_parked() const EXCLUDES(mu_);
  // Every slot now, by id.
  std::vector<SlotState> slots() const EXCLUDES(mu_);

  struct Parked {
    int id = 0;
    std::string message;  // what was logged: why, and the end of its log
  };
  // Slots parked since the last call.
  std::vector<Parked> take_parked() EXCLUDES(mu_);

 private:
  struct Slot {
    pid_t pid = -1;
    uint64_t steps_at_start = 0;
    double restart_at = -1;  // steady seconds; < 0: none pending
    bool parked = false;
    bool killing = false;    // kill() sent SIGKILL for `kill_reason`
    Death kill_reason;
    int deaths = 0;
    int deaths_in_window = 0;
    int hung = 0;
    std::string last_death;
    int64_t memory_bytes = -1;
  };
  pid_t spawn(int id) REQUIRES(mu_);
  void reap() EXCLUDES(mu_);
  void start_due() EXCLUDES(mu_);
  void watch_memory() EXCLUDES(mu_);
  void on_exit(int id, pid_t pid, int status) REQUIRES(mu_);
  void park(int id, const std::string& why) REQUIRES(mu_);
  bool all_gone() const REQUIRES(mu_);  // no actor is running
  std::string log_path(int id) const;

  const LocalActorsOptions options_;
  mutable base::Mutex mu_;
  base::CondVar changed_;  // a child exited or started, a restart is due, or shutdown began
  RestartPolicy policy_ GUARDED_BY(mu_);
  std::vector<Slot> slots_ GUARDED_BY(mu_);
  std::vector<Parked> newly_parked_ GUARDED_BY(mu_);
  int restarts_ GUARDED_BY(mu_) = 0;
  bool stopping_ GUARDED_BY(mu_) = false;
  // The kernel's OOM kill count (kernel_oom_kills()) as the watcher read it,
  // with when (steady seconds), newest last, the last few seconds of them: a
  // death compares the count with its value a moment before.
  std::deque<std::pair<double, int64_t>> oom_samples_ GUARDED_BY(mu_);
  // The count a death compares with: the newest sample from before that moment.
  int64_t oom_kills_before(double now) const REQUIRES(mu_);
  std::thread reaper_;   // runs reap()
  std::thread starter_;  // runs start_due()
  std::thread watcher_;  // runs watch_memory()
};

// The last `lines` lines of the file at `path` (at most its last 64 KiB), or
// "" when it cannot be read.
std::string tail_lines(const std::string& path, int lines);

}  // namespace moonseed::cli
