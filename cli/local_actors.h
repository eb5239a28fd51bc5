// Local actor processes of `moonseed run`: started as `moonseed actor`, each in
// its own process group (a terminal's Ctrl-C reaches only the learner, which
// then says Bye), killed with the learner if it dies (PR_SET_PDEATHSIG), and
// restarted with backoff when one dies while the run goes on.
//
// Thread-safe: one supervisor thread reaps children; the other methods may be
// called from any thread.
#pragma once

#include <sys/types.h>

#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "base/mutex.h"

namespace moonseed::cli {

struct LocalActorsOptions {
  std::string binary;     // path of the moonseed-actor executable (actor_binary())
  std::string address;    // learner address for --connect
  int count = 0;          // actor ids 0..count-1
  std::string log_dir;    // actor-N.log and actor-N.pid are written here
  double max_backoff_s = 30;
};

class LocalActors {
 public:
  explicit LocalActors(LocalActorsOptions options);
  ~LocalActors();  // shutdown(0)
  LocalActors(const LocalActors&) = delete;
  LocalActors& operator=(const LocalActors&) = delete;

  // Starts every actor and the supervisor thread.
  void start() EXCLUDES(mu_);
  // From now on an actor that exits is not restarted: the run is ending and
  // the learner is about to say Bye. shutdown() implies it.
  void stop_restarting() EXCLUDES(mu_);
  // Stops restarting actors, waits up to `grace_s` for them to exit on their
  // own (after the learner's Bye), then SIGKILLs the rest and reaps them.
  void shutdown(double grace_s) EXCLUDES(mu_);

  int restarts() const EXCLUDES(mu_);
  // Pid of actor `id`, or -1 when it is not running.
  pid_t pid_of(int id) const EXCLUDES(mu_);

 private:
  pid_t spawn(int id) REQUIRES(mu_);
  void supervise() EXCLUDES(mu_);
  bool all_gone() const REQUIRES(mu_);  // no actor is running

  const LocalActorsOptions options_;
  mutable base::Mutex mu_;
  base::CondVar changed_;  // a child exited or shutdown began
  std::vector<pid_t> pids_ GUARDED_BY(mu_);         // -1 = not running
  std::vector<double> started_at_ GUARDED_BY(mu_);  // steady seconds
  std::vector<double> backoff_s_ GUARDED_BY(mu_);
  int restarts_ GUARDED_BY(mu_) = 0;
  bool stopping_ GUARDED_BY(mu_) = false;
  std::thread reaper_;  // runs supervise()
};

}  // namespace moonseed::cli
