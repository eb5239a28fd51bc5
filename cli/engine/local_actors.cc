#include "cli/engine/local_actors.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>

#include "base/log.h"
#include "base/thread_name.h"
#include "cli/engine/actor_memory.h"

namespace moonseed::cli {
namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// A fixed-point number as a person reads it: "0", "1", "2.5".
std::string seconds_text(double s) {
  std::ostringstream out;
  out << s;
  return out.str();
}

}  // namespace

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
      policy_(options_.count, options_.rules),
      slots_(static_cast<size_t>(options_.count)) {}

LocalActors::~LocalActors() { shutdown(0); }

std::string LocalActors::log_path(int id) const {
  return options_.log_dir + "/actor-" + std::to_string(id) + ".log";
}

void LocalActors::start() {
  base::MutexLock lock(mu_);
  oom_samples_.emplace_back(now_s(), kernel_oom_kills());
  for (int id = 0; id < options_.count; ++id) slots_[static_cast<size_t>(id)].pid = spawn(id);
  reaper_ = std::thread([this] {
    base::set_thread_name("ms-actor-reap");
    reap();
  });
  starter_ = std::thread([this] {
    base::set_thread_name("ms-actor-start");
    start_due();
  });
  watcher_ = std::thread([this] {
    base::set_thread_name("ms-actor-mem");
    watch_memory();
  });
}

int64_t LocalActors::oom_kills_before(double now) const {
  // A kill is counted before its process is reaped: a sample taken within
  // kMargin of the death may already count it.
  constexpr double kMargin = 1.0;
  int64_t count = oom_samples_.empty() ? -1 : oom_samples_.front().second;
  for (const auto& [at, kills] : oom_samples_) {
    if (at <= now - kMargin) count = kills;
  }
  return count;
}

// Reads every running actor's memory without the lock (a pass over /proc),
// then kills those over the limit, unless they ended or were replaced meanwhile.
void LocalActors::watch_memory() {
  base::MutexLock lock(mu_);
  constexpr double kKeepSamplesS = 5;
  while (!stopping_) {
    const double now = now_s();
    oom_samples_.emplace_back(now, kernel_oom_kills());
    while (oom_samples_.size() > 2 && oom_samples_[1].first < now - kKeepSamplesS) oom_samples_.pop_front();
    std::vector<pid_t> groups;
    for (const Slot& slot : slots_) {
      if (slot.pid > 0 && !slot.killing) groups.push_back(slot.pid);  // each actor leads its own group
    }
    if (options_.memory_limit_bytes <= 0) groups.clear();
    lock.unlock();
    const std::map<pid_t, int64_t> memory = resident_bytes_by_group(groups);
    lock.lock();
    for (int id = 0; id < options_.count; ++id) {
      Slot& slot = slots_[static_cast<size_t>(id)];
      const auto it = slot.pid > 0 ? memory.find(slot.pid) : memory.end();
      if (it == memory.end()) continue;
      slot.memory_bytes = it->second;
      if (slot.killing || it->second < options_.memory_limit_bytes) continue;
      // The whole group: what the env started holds memory too.
      if (::kill(-slot.pid, SIGKILL) != 0 && ::kill(slot.pid, SIGKILL) != 0) continue;
      slot.killing = true;
      slot.kill_reason = Death{Death::Cause::kMemory, 0,
                               "its processes held " + memory_text(it->second) + ", over topology.actor_memory_mb = " +
                                   std::to_string(options_.memory_limit_bytes >> 20)};
    }
    changed_.wait_for(lock, std::chrono::duration<double>(options_.memory_check_s));
  }
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
  slots_[static_cast<size_t>(id)].steps_at_start = options_.env_steps ? options_.env_steps(id) : 0;
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
      if (slots_[static_cast<size_t>(id)].pid == pid) on_exit(id, pid, status);
    }
    changed_.notify_all();
  }
}

void LocalActors::on_exit(int id, pid_t pid, int status) {
  Slot& slot = slots_[static_cast<size_t>(id)];
  slot.pid = -1;
  const bool killed_by_run = slot.killing;
  slot.killing = false;
  if (stopping_) return;  // the run's own shutdown: not a death
  Death death = killed_by_run ? slot.kill_reason : death_of_status(status);
  // A SIGKILL nobody here sent while the kernel's OOM killer acted: memory ran out (on the host or
  // in the run's cgroup) and the kernel chose this actor, as its oom_score_adj asks.
  const int64_t before = oom_kills_before(now_s());
  if (!killed_by_run && death.cause == Death::Cause::kSignaled && death.code == SIGKILL && before >= 0 &&
      kernel_oom_kills() > before) {
    death = Death{Death::Cause::kMemory, SIGKILL,
                  "the kernel's OOM killer ended it (memory ran out on this host or in the run's cgroup)"};
  }
  slot.memory_bytes = -1;
  const bool worked = options_.env_steps && options_.env_steps(id) > slot.steps_at_start;
  const RestartPolicy::Decision d = policy_.on_exit(id, worked, now_s());
  ++slot.deaths;
  if (death.cause == Death::Cause::kHung) ++slot.hung;
  slot.deaths_in_window = d.deaths_in_window;
  slot.last_death = describe(death);
  const std::string who = "actor " + std::to_string(id) + " (" + (options_.env.empty() ? "" : options_.env + ", ") +
                          "pid " + std::to_string(pid) + ") " + slot.last_death;
  const std::string window = seconds_text(options_.rules.window_s) + " s";
  if (d.park) {
    const bool early = options_.rules.early_deaths_to_park > 0 && d.early_deaths >= options_.rules.early_deaths_to_park;
    park(id, who + (early ? " before its first env step, " + std::to_string(d.early_deaths) + " times in a row"
                          : ", " + std::to_string(d.deaths_in_window) + " deaths in " + window) +
                 ": not restarting it");
    return;
  }
  // The first death in a window is said in full: with the last line of the
  // actor's log when it ended itself with an error code (it said why there,
  // e.g. a reward_shaping call that ran too long). Later ones in a short line
  // each: how many, and when it comes back.
  const std::string when = d.delay_s > 0 ? "in " + seconds_text(d.delay_s) + " s" : std::string("now");
  const std::string count = d.early_deaths > 0 ? std::to_string(d.early_deaths) + " times in a row before its first env step"
                                               : std::to_string(d.deaths_in_window) + " deaths in " + window;
  if (d.deaths_in_window == 1 && d.early_deaths <= 1) {
    const std::string last = death.cause == Death::Cause::kExited ? tail_lines(log_path(id), 1) : "";
    base::log_warning(who + (d.early_deaths > 0 ? " before its first env step" : "") + "; restarting " + when +
                      (last.empty() ? "" : "; its log ends: " + last));
  } else {
    const int park_at = d.early_deaths > 0 ? options_.rules.early_deaths_to_park : options_.rules.deaths_to_park;
    base::log_warning(who + " (" + count + (park_at > 0 ? ", parked at " + std::to_string(park_at) : "") +
                      "); restarting " + when);
  }
  slot.restart_at = now_s() + d.delay_s;
}

void LocalActors::park(int id, const std::string& why) {
  std::string message = why;
  const std::string tail = tail_lines(log_path(id), 5);
  if (tail.empty()) {
    message += " (its log " + log_path(id) + " is empty)";
  } else {
    message += "; the end of " + log_path(id) + ":";
    std::istringstream lines(tail);
    for (std::string line; std::getline(lines, line);) message += "\n    " + line;
  }
  slots_[static_cast<size_t>(id)].parked = true;
  newly_parked_.push_back(Parked{id, message});
  base::log_error(message);  // from this thread, the sink keeps it off the progress line
}

void LocalActors::start_due() {
  base::MutexLock lock(mu_);
  while (!stopping_) {
    double next = -1;
    const double now = now_s();
    for (int id = 0; id < options_.count; ++id) {
      Slot& slot = slots_[static_cast<size_t>(id)];
      if (slot.restart_at < 0) continue;
      if (slot.restart_at > now) {
        next = next < 0 ? slot.restart_at : std::min(next, slot.restart_at);
        continue;
      }
      slot.restart_at = -1;
      try {
        slot.pid = spawn(id);
        ++restarts_;
      } catch (const std::exception& e) {
        base::log_error("cannot restart actor " + std::to_string(id) + ": " + e.what() + "; trying again in 1 s");
        slot.restart_at = now + 1;
        next = next < 0 ? slot.restart_at : std::min(next, slot.restart_at);
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
  return std::all_of(slots_.begin(), slots_.end(), [](const Slot& s) { return s.pid <= 0; });
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
  for (const Slot& s : slots_) {
    if (s.pid > 0) ::kill(s.pid, SIGKILL);
  }
  lock.unlock();
  reaper_.join();
  starter_.join();
  if (watcher_.joinable()) watcher_.join();
}

bool LocalActors::kill(int id, Death why) {
  base::MutexLock lock(mu_);
  if (id < 0 || id >= options_.count || slots_[static_cast<size_t>(id)].pid <= 0) return false;
  Slot& slot = slots_[static_cast<size_t>(id)];
  if (::kill(slot.pid, SIGKILL) != 0) return false;
  slot.killing = true;
  slot.kill_reason = std::move(why);
  return true;
}

int LocalActors::restarts() const {
  base::MutexLock lock(mu_);
  return restarts_;
}

pid_t LocalActors::pid_of(int id) const {
  base::MutexLock lock(mu_);
  return id >= 0 && id < options_.count ? slots_[static_cast<size_t>(id)].pid : -1;
}

bool LocalActors::all_parked() const {
  base::MutexLock lock(mu_);
  return !slots_.empty() && std::all_of(slots_.begin(), slots_.end(), [](const Slot& s) { return s.parked; });
}

std::vector<SlotState> LocalActors::slots() const {
  base::MutexLock lock(mu_);
  const double now = now_s();
  std::vector<SlotState> out;
  for (int id = 0; id < options_.count; ++id) {
    const Slot& slot = slots_[static_cast<size_t>(id)];
    SlotState s;
    s.id = id;
    s.pid = slot.pid;
    s.deaths = slot.deaths;
    s.deaths_in_window = slot.deaths_in_window;
    s.hung = slot.hung;
    s.last_death = slot.last_death;
    s.memory_bytes = slot.memory_bytes;
    if (slot.parked) {
      s.state = SlotState::State::kParked;
    } else if (slot.pid > 0) {
      s.state = SlotState::State::kRunning;
    } else if (slot.restart_at >= 0) {
      s.state = SlotState::State::kBackingOff;
      s.restart_in_s = std::max(0.0, slot.restart_at - now);
    } else {
      s.state = SlotState::State::kStopped;
    }
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<LocalActors::Parked> LocalActors::take_parked() {
  base::MutexLock lock(mu_);
  std::vector<Parked> out;
  out.swap(newly_parked_);
  return out;
}

}  // namespace moonseed::cli
