#include "cli/local_actors.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
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

// A fixed-point number as a person reads it: "0", "1", "2.5".
std::string seconds_text(double s) {
  std::ostringstream out;
  out << s;
  return out.str();
}

}  // namespace

RestartPolicy::RestartPolicy(int slots, double first_backoff_s, double max_backoff_s, int park_after)
    : first_backoff_s_(first_backoff_s),
      max_backoff_s_(max_backoff_s),
      park_after_(park_after),
      early_deaths_(static_cast<size_t>(slots), 0) {}

RestartPolicy::Decision RestartPolicy::on_exit(int id, bool worked) {
  int& early = early_deaths_.at(static_cast<size_t>(id));
  Decision d;
  if (worked) {
    early = 0;  // it did its job until it died: back at once, whatever killed it
    return d;
  }
  d.early_deaths = ++early;
  if (park_after_ > 0 && early >= park_after_) {
    d.park = true;
    return d;
  }
  d.delay_s = std::min(max_backoff_s_, first_backoff_s_ * static_cast<double>(1 << std::min(early - 1, 20)));
  return d;
}

std::string tail_lines(const std::string& path, int lines) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  in.seekg(std::max<std::streamoff>(0, size - 65536));
  std::vector<std::string> all;
  for (std::string line; std::getline(in, line);) all.push_back(std::move(line));
  const size_t first = all.size() > static_cast<size_t>(lines) ? all.size() - static_cast<size_t>(lines) : 0;
  std::string out;
  for (size_t i = first; i < all.size(); ++i) out += (i > first ? "\n" : "") + all[i];
  return out;
}

LocalActors::LocalActors(LocalActorsOptions options)
    : options_(std::move(options)),
      policy_(options_.count, options_.first_backoff_s, options_.max_backoff_s, options_.park_after),
      pids_(static_cast<size_t>(options_.count), -1),
      batches_at_start_(static_cast<size_t>(options_.count), 0),
      restart_at_(static_cast<size_t>(options_.count), -1),
      parked_(static_cast<size_t>(options_.count), false) {}

LocalActors::~LocalActors() { shutdown(0); }

std::string LocalActors::log_path(int id) const {
  return options_.log_dir + "/actor-" + std::to_string(id) + ".log";
}

void LocalActors::start() {
  base::MutexLock lock(mu_);
  for (int id = 0; id < options_.count; ++id) pids_[static_cast<size_t>(id)] = spawn(id);
  reaper_ = std::thread([this] { reap(); });
  starter_ = std::thread([this] { start_due(); });
}

int own_oom_score_adj() {
  std::ifstream in("/proc/self/oom_score_adj");
  int adj = 0;
  return in >> adj ? adj : 0;
}

int actor_oom_score_adj(int learner) { return std::clamp(learner + kActorOomScoreAdjAbove, -1000, 1000); }

pid_t LocalActors::spawn(int id) {
  const std::string log = log_path(id);
  const std::string id_arg = std::to_string(id);
  // Everything the child needs is built here: after fork() it may only make async-signal-safe calls.
  std::vector<std::string> words = {options_.binary};
  words.insert(words.end(), options_.arguments.begin(), options_.arguments.end());
  words.insert(words.end(), {"--connect", options_.address, "--actor-id", id_arg});
  std::vector<char*> argv;
  for (std::string& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  std::vector<std::string> environment;
  for (char** e = environ; *e; ++e) {
    const std::string entry = *e;
    const std::string name = entry.substr(0, entry.find('='));
    const bool replaced = std::any_of(options_.environment.begin(), options_.environment.end(),
                                      [&](const std::string& o) { return o.compare(0, name.size() + 1, name + "=") == 0; });
    if (!replaced) environment.push_back(entry);
  }
  environment.insert(environment.end(), options_.environment.begin(), options_.environment.end());
  std::vector<char*> envp;
  for (std::string& e : environment) envp.push_back(e.data());
  envp.push_back(nullptr);
  batches_at_start_[static_cast<size_t>(id)] = options_.step_batches ? options_.step_batches(id) : 0;
  // When memory runs out the kernel kills the process with the highest score: an actor, never the
  // learner before its actors (an env that leaks would otherwise take the learner down with it).
  const std::string oom_adj = std::to_string(actor_oom_score_adj(own_oom_score_adj()));
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
    // Raising one's own score needs no privilege.
    if (const int adj = ::open("/proc/self/oom_score_adj", O_WRONLY); adj >= 0) {
      if (::write(adj, oom_adj.data(), oom_adj.size()) < 0) {
        // Left as it was: the kill order is a preference, not a condition of running.
      }
      ::close(adj);
    }
    int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
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
    ::execve(options_.binary.c_str(), argv.data(), envp.data());
    ::_exit(127);
  }
  std::ofstream(options_.log_dir + "/actor-" + id_arg + ".pid") << pid << "\n";
  changed_.notify_all();  // the reaper has a child to wait for
  return pid;
}

void LocalActors::reap() {
  for (;;) {
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, 0);
    base::MutexLock lock(mu_);
    if (pid < 0) {
      if (errno == EINTR) continue;
      // ECHILD: no actor runs now. Wait until one is started again, or the end.
      changed_.wait(lock, [&]() REQUIRES(mu_) { return !all_gone() || stopping_; });
      if (stopping_ && all_gone()) return;
      continue;
    }
    for (int id = 0; id < options_.count; ++id) {
      if (pids_[static_cast<size_t>(id)] == pid) on_exit(id, pid, status);
    }
    changed_.notify_all();
  }
}

void LocalActors::on_exit(int id, pid_t pid, int status) {
  const size_t slot = static_cast<size_t>(id);
  pids_[slot] = -1;
  if (stopping_) return;
  const bool worked =
      options_.step_batches && options_.step_batches(id) > batches_at_start_[slot];
  const RestartPolicy::Decision d = policy_.on_exit(id, worked);
  const std::string who = "actor " + std::to_string(id) + " (pid " + std::to_string(pid) + ") " +
                          describe_status(status);
  if (d.park) {
    std::string message = who + " before its first step batch, " + std::to_string(d.early_deaths) +
                          " times in a row: not restarting it";
    const std::string tail = tail_lines(log_path(id), 5);
    if (tail.empty()) {
      message += " (its log " + log_path(id) + " is empty)";
    } else {
      message += "; the end of " + log_path(id) + ":";
      std::istringstream lines(tail);
      for (std::string line; std::getline(lines, line);) message += "\n    " + line;
    }
    parked_[slot] = true;
    newly_parked_.push_back(Parked{id, message});
    base::log_error(message);  // from this thread, the sink keeps it off the progress line
    return;
  }
  // An actor that ends itself with an error code said why on its last line
  // (e.g. a reward_shaping call that ran too long): quote it.
  const std::string last = WIFEXITED(status) && WEXITSTATUS(status) != 0 ? tail_lines(log_path(id), 1) : "";
  base::log_warning(who + (worked ? "" : " before its first step batch") + "; restarting " +
                    (d.delay_s > 0 ? "in " + seconds_text(d.delay_s) + " s" : std::string("now")) +
                    (last.empty() ? "" : "; its log ends: " + last));
  restart_at_[slot] = now_s() + d.delay_s;
}

void LocalActors::start_due() {
  base::MutexLock lock(mu_);
  while (!stopping_) {
    double next = -1;
    const double now = now_s();
    for (int id = 0; id < options_.count; ++id) {
      const size_t slot = static_cast<size_t>(id);
      if (restart_at_[slot] < 0) continue;
      if (restart_at_[slot] > now) {
        next = next < 0 ? restart_at_[slot] : std::min(next, restart_at_[slot]);
        continue;
      }
      restart_at_[slot] = -1;
      try {
        pids_[slot] = spawn(id);
        ++restarts_;
      } catch (const std::exception& e) {
        base::log_error("cannot restart actor " + std::to_string(id) + ": " + e.what() + "; trying again in 1 s");
        restart_at_[slot] = now + 1;
        next = next < 0 ? restart_at_[slot] : std::min(next, restart_at_[slot]);
      }
    }
    if (next < 0) {
      changed_.wait(lock);
    } else {
      changed_.wait_until(lock, std::chrono::steady_clock::time_point(std::chrono::duration_cast<
                                    std::chrono::steady_clock::duration>(std::chrono::duration<double>(next))));
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
  starter_.join();
}

bool LocalActors::kill(int id) {
  base::MutexLock lock(mu_);
  if (id < 0 || id >= options_.count || pids_[static_cast<size_t>(id)] <= 0) return false;
  return ::kill(pids_[static_cast<size_t>(id)], SIGKILL) == 0;
}

int LocalActors::restarts() const {
  base::MutexLock lock(mu_);
  return restarts_;
}

pid_t LocalActors::pid_of(int id) const {
  base::MutexLock lock(mu_);
  return id >= 0 && id < options_.count ? pids_[static_cast<size_t>(id)] : -1;
}

bool LocalActors::all_parked() const {
  base::MutexLock lock(mu_);
  return !parked_.empty() && std::all_of(parked_.begin(), parked_.end(), [](bool p) { return p; });
}

std::vector<LocalActors::Parked> LocalActors::take_parked() {
  base::MutexLock lock(mu_);
  std::vector<Parked> out;
  out.swap(newly_parked_);
  return out;
}

}  // namespace moonseed::cli
