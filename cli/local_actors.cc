#include "cli/local_actors.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "base/log.h"

namespace moonseed::cli {
namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string describe_status(int status) {
  if (WIFEXITED(status)) return "exited with code " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return std::string("killed by signal ") + strsignal(WTERMSIG(status));
  return "stopped";
}

}  // namespace

LocalActors::LocalActors(LocalActorsOptions options)
    : options_(std::move(options)),
      pids_(options_.count, -1),
      started_at_(options_.count, 0),
      backoff_s_(options_.count, 1.0) {}

LocalActors::~LocalActors() { shutdown(0); }

void LocalActors::start() {
  base::MutexLock lock(mu_);
  for (int id = 0; id < options_.count; ++id) pids_[id] = spawn(id);
  reaper_ = std::thread([this] { supervise(); });
}

pid_t LocalActors::spawn(int id) {
  const std::string log_path = options_.log_dir + "/actor-" + std::to_string(id) + ".log";
  const std::string id_arg = std::to_string(id);
  const pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error(std::string("fork failed: ") + std::strerror(errno));
  if (pid == 0) {
    // Child: only async-signal-safe calls until exec.
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) ::_exit(1);  // the learner died before prctl
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    int fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) {
      ::dup2(fd, STDOUT_FILENO);
      ::dup2(fd, STDERR_FILENO);
      ::close(fd);
    }
    // Nothing else of the learner's goes with the actor: not its listening
    // sockets (asio opens them without close-on-exec; an actor holding one
    // would keep a dead learner's socket accepting, and a resumed learner
    // could not listen on it), not its connections to other actors, not the
    // files it writes.
    if (::close_range(3, ~0U, 0) != 0) {
      for (int other = 3; other < 65536; ++other) ::close(other);
    }
    ::execl(options_.binary.c_str(), options_.binary.c_str(), "--connect", options_.address.c_str(),
            "--actor-id", id_arg.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  started_at_[id] = now_s();
  std::ofstream(options_.log_dir + "/actor-" + id_arg + ".pid") << pid << "\n";
  return pid;
}

void LocalActors::supervise() {
  for (;;) {
    int status = 0;
    pid_t pid = ::waitpid(-1, &status, 0);
    base::MutexLock lock(mu_);
    if (pid < 0) {
      if (errno == EINTR) continue;
      // ECHILD: nothing left to reap. Every actor is respawned before we wait
      // again, so this only happens once shutdown has reaped them all.
      while (!stopping_) changed_.wait(lock);
      return;
    }
    int id = -1;
    for (int i = 0; i < options_.count; ++i) {
      if (pids_[i] == pid) id = i;
    }
    if (id < 0) continue;
    pids_[id] = -1;
    changed_.notify_all();
    if (stopping_) continue;
    // An actor that ran for a while gets restarted quickly; one that keeps
    // dying at start waits longer each time.
    if (now_s() - started_at_[id] > 30) backoff_s_[id] = 1.0;
    double wait_s = backoff_s_[id];
    backoff_s_[id] = std::min(backoff_s_[id] * 2, options_.max_backoff_s);
    std::ostringstream message;
    message << "actor " << id << " (pid " << pid << ") " << describe_status(status) << "; restarting in " << wait_s
            << " s";
    base::log_warning(message.str());  // from this thread, the sink keeps it off the progress line
    const auto restart_at = std::chrono::steady_clock::now() + std::chrono::duration<double>(wait_s);
    while (!stopping_ && changed_.wait_until(lock, restart_at) != std::cv_status::timeout) {
    }
    if (stopping_) continue;
    try {
      pids_[id] = spawn(id);
      ++restarts_;
    } catch (const std::exception& e) {
      base::log_error("cannot restart actor " + std::to_string(id) + ": " + e.what());
    }
  }
}

bool LocalActors::all_gone() const {
  for (pid_t p : pids_) {
    if (p > 0) return false;
  }
  return true;
}

void LocalActors::stop_restarting() {
  base::MutexLock lock(mu_);
  stopping_ = true;
  changed_.notify_all();
}

void LocalActors::shutdown(double grace_s) {
  base::MutexLock lock(mu_);
  if (!reaper_.joinable()) return;
  stopping_ = true;
  changed_.notify_all();
  const auto give_up_at = std::chrono::steady_clock::now() + std::chrono::duration<double>(grace_s);
  while (!all_gone() && changed_.wait_until(lock, give_up_at) != std::cv_status::timeout) {
  }
  for (pid_t p : pids_) {
    if (p > 0) ::kill(p, SIGKILL);
  }
  lock.unlock();
  reaper_.join();
}

int LocalActors::restarts() const {
  base::MutexLock lock(mu_);
  return restarts_;
}

pid_t LocalActors::pid_of(int id) const {
  base::MutexLock lock(mu_);
  return id >= 0 && id < options_.count ? pids_[id] : -1;
}

}  // namespace moonseed::cli
