// Local actor processes of `moonseed run`: started as `moonseed-actor`, each
// in its own process group (a terminal's Ctrl-C reaches only the learner,
// which then says Bye), killed with the learner if it dies
// (PR_SET_PDEATHSIG), and restarted when one dies while the run goes on.
//
// Restarts (RestartPolicy): every slot has its own schedule. A death is
// reaped the moment it happens; an actor that had done work (sent the learner
// a step batch since it started) is restarted at once, however short its
// life; only one that dies before its first step batch waits, 1 s doubling to
// max_backoff_s, and after park_after such deaths in a row its slot is parked:
// not restarted again, with a message that quotes the end of its log.
//
// Threads: a reaper (waitpid) records deaths and decides; a starter starts
// each slot when its time comes. The public methods may be called from any
// thread.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "base/mutex.h"

namespace moonseed::cli {

// What to do when a local actor's process ends: a pure function of the slot's
// history, so tests drive it without processes or clocks.
class RestartPolicy {
 public:
  // Early deaths wait first_backoff_s, doubling up to max_backoff_s; the
  // park_after-th in a row parks the slot (0: never).
  RestartPolicy(int slots, double first_backoff_s, double max_backoff_s, int park_after);

  struct Decision {
    bool park = false;      // give up on this slot
    double delay_s = 0;     // otherwise: restart after this long
    int early_deaths = 0;   // deaths before any work, in a row, this one included
  };
  // Slot `id`'s process ended; `worked`: it sent a step batch since it started.
  Decision on_exit(int id, bool worked);

 private:
  const double first_backoff_s_;
  const double max_backoff_s_;
  const int park_after_;
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
  double first_backoff_s = 1;  // after the first early death; doubles with each
  double max_backoff_s = 30;
  int park_after = 5;          // early deaths in a row that park a slot
  // StepBatches actor `id` has sent the learner over the whole run
  // (Learner::actor_step_batches). Null: every death counts as early.
  std::function<uint64_t(int id)> step_batches;
};

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

  // SIGKILLs actor `id` (a hung one); it is restarted like any that dies.
  // False when it is not running.
  bool kill(int id) EXCLUDES(mu_);

  int restarts() const EXCLUDES(mu_);
  // Pid of actor `id`, or -1 when it is not running.
  pid_t pid_of(int id) const EXCLUDES(mu_);
  // Every slot is parked (there is at least one).
  bool all_parked() const EXCLUDES(mu_);

  struct Parked {
    int id = 0;
    std::string message;  // what was logged: why, and the end of its log
  };
  // Slots parked since the last call.
  std::vector<Parked> take_parked() EXCLUDES(mu_);

 private:
  pid_t spawn(int id) REQUIRES(mu_);
  void reap() EXCLUDES(mu_);
  void start_due() EXCLUDES(mu_);
  void on_exit(int id, pid_t pid, int status) REQUIRES(mu_);
  bool all_gone() const REQUIRES(mu_);  // no actor is running
  std::string log_path(int id) const;

  const LocalActorsOptions options_;
  mutable base::Mutex mu_;
  base::CondVar changed_;  // a child exited or started, a restart is due, or shutdown began
  RestartPolicy policy_ GUARDED_BY(mu_);
  std::vector<pid_t> pids_ GUARDED_BY(mu_);              // -1 = not running
  std::vector<uint64_t> batches_at_start_ GUARDED_BY(mu_);
  std::vector<double> restart_at_ GUARDED_BY(mu_);       // steady seconds; < 0: none pending
  std::vector<bool> parked_ GUARDED_BY(mu_);
  std::vector<Parked> newly_parked_ GUARDED_BY(mu_);
  int restarts_ GUARDED_BY(mu_) = 0;
  bool stopping_ GUARDED_BY(mu_) = false;
  std::thread reaper_;   // runs reap()
  std::thread starter_;  // runs start_due()
};

// The last `lines` lines of the file at `path` (at most its last 64 KiB), or
// "" when it cannot be read.
std::string tail_lines(const std::string& path, int lines);

}  // namespace moonseed::cli
