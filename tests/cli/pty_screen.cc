#include "tests/cli/pty_screen.h"

#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

extern char** environ;

namespace moonseed::testing {
namespace {

using Clock = std::chrono::steady_clock;

Clock::time_point deadline_after(double seconds) {
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

int remaining_ms(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left < 0 ? 0 : static_cast<int>(left);
}

// This process's environment with `overrides` ("NAME=value") applied.
std::vector<std::string> child_environment(const std::vector<std::string>& overrides) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    const std::string name = entry.substr(0, entry.find('='));
    bool replaced = false;
    for (const std::string& o : overrides) replaced = replaced || o.substr(0, o.find('=')) == name;
    if (!replaced) env.push_back(entry);
  }
  env.insert(env.end(), overrides.begin(), overrides.end());
  return env;
}

std::vector<char*> pointers(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (std::string& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

int exit_code_of(int status) { return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status); }

}  // namespace

PtyScreen::PtyScreen(int master_fd) : fd_(master_fd) {}

PtyScreen::~PtyScreen() { close(); }

void PtyScreen::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

void PtyScreen::type(const std::string& keys) {
  size_t done = 0;
  while (fd_ >= 0 && done < keys.size()) {
    const ssize_t n = ::write(fd_, keys.data() + done, keys.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw std::runtime_error(std::string("typing into the pty failed: ") + std::strerror(errno));
    done += static_cast<size_t>(n);
  }
}

bool PtyScreen::read_some(int timeout_ms) {
  if (fd_ < 0) return false;
  pollfd p{fd_, POLLIN, 0};
  const int ready = ::poll(&p, 1, timeout_ms);
  if (ready <= 0) return ready == 0 || errno == EINTR;
  char buffer[4096];
  const ssize_t n = ::read(fd_, buffer, sizeof buffer);
  if (n > 0) {
    output_.append(buffer, static_cast<size_t>(n));
    return true;
  }
  return n < 0 && errno == EINTR;  // EIO: the slave side is closed
}

bool PtyScreen::expect(const std::string& text, double timeout_s, std::string* before) {
  const auto deadline = deadline_after(timeout_s);
  for (;;) {
    const size_t found = output_.find(text, matched_);
    if (found != std::string::npos) {
      if (before != nullptr) *before = output_.substr(matched_, found - matched_);
      matched_ = found + text.size();
      return true;
    }
    if (Clock::now() >= deadline || !read_some(remaining_ms(deadline))) return false;
  }
}

void PtyScreen::drain(int timeout_ms) {
  const auto deadline = deadline_after(timeout_ms / 1000.0);
  while (Clock::now() < deadline && read_some(remaining_ms(deadline))) {
  }
}

Pty open_pty(int columns, int rows) {
  Pty pty;
  winsize size{};
  size.ws_col = static_cast<unsigned short>(columns);
  size.ws_row = static_cast<unsigned short>(rows);
  if (openpty(&pty.master, &pty.slave, nullptr, nullptr, &size) != 0) {
    throw std::runtime_error(std::string("openpty failed: ") + std::strerror(errno));
  }
  return pty;
}

PtyProcess::PtyProcess(const std::vector<std::string>& argv, const std::vector<std::string>& env, int columns) {
  std::vector<std::string> args = argv;
  std::vector<std::string> environment = child_environment(env);
  std::vector<char*> arg_pointers = pointers(args);
  std::vector<char*> env_pointers = pointers(environment);
  winsize size{};
  size.ws_col = static_cast<unsigned short>(columns);
  size.ws_row = 24;
  int master = -1;
  pid_ = forkpty(&master, nullptr, nullptr, &size);
  if (pid_ < 0) throw std::runtime_error(std::string("forkpty failed: ") + std::strerror(errno));
  if (pid_ == 0) {
    execve(arg_pointers[0], arg_pointers.data(), env_pointers.data());
    _exit(127);
  }
  screen_ = std::make_unique<PtyScreen>(master);
}

PtyProcess::~PtyProcess() {
  if (!status_) {
    kill(pid_, SIGKILL);
    int status = 0;
    waitpid(pid_, &status, 0);
  }
}

std::optional<int> PtyProcess::wait(double timeout_s) {
  const auto deadline = deadline_after(timeout_s);
  while (!status_) {
    int status = 0;
    const pid_t done = waitpid(pid_, &status, WNOHANG);
    if (done == pid_) {
      status_ = exit_code_of(status);
      break;
    }
    if (Clock::now() >= deadline) break;
    // Keep reading so that the child never blocks on a full terminal.
    if (!screen_->read_some(20)) poll(nullptr, 0, 20);
  }
  return status_;
}

PipedRun run_piped(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                   const std::string& input, double timeout_s) {
  int in[2], out[2], err[2];
  if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) {
    throw std::runtime_error(std::string("pipe failed: ") + std::strerror(errno));
  }
  std::vector<std::string> args = argv;
  std::vector<std::string> environment = child_environment(env);
  std::vector<char*> arg_pointers = pointers(args);
  std::vector<char*> env_pointers = pointers(environment);
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error(std::string("fork failed: ") + std::strerror(errno));
  if (pid == 0) {
    dup2(in[0], 0);
    dup2(out[1], 1);
    dup2(err[1], 2);
    execve(arg_pointers[0], arg_pointers.data(), env_pointers.data());
    _exit(127);
  }
  ::close(in[0]);
  ::close(out[1]);
  ::close(err[1]);
  // The input is small: it fits in the pipe, and closing it is end of input.
  if (::write(in[1], input.data(), input.size()) != static_cast<ssize_t>(input.size())) {
    throw std::runtime_error("writing the child's input failed");
  }
  ::close(in[1]);

  PipedRun run;
  const auto deadline = deadline_after(timeout_s);
  pollfd fds[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
  std::string* sinks[2] = {&run.out, &run.err};
  int open_pipes = 2;
  while (open_pipes > 0 && Clock::now() < deadline) {
    if (poll(fds, 2, remaining_ms(deadline)) <= 0) continue;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      char buffer[4096];
      const ssize_t n = ::read(fds[i].fd, buffer, sizeof buffer);
      if (n > 0) {
        sinks[i]->append(buffer, static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open_pipes;
      }
    }
  }
  for (const pollfd& p : fds) {
    if (p.fd >= 0) ::close(p.fd);
  }
  for (;;) {
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) {
      run.exit_code = exit_code_of(status);
      return run;
    }
    if (Clock::now() >= deadline) break;
    poll(nullptr, 0, 20);
  }
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  return run;
}

std::string make_temp_dir(const std::string& prefix) {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/" + prefix + "-XXXXXX";
  if (mkdtemp(pattern.data()) == nullptr) {
    throw std::runtime_error("mkdtemp " + pattern + " failed: " + std::strerror(errno));
  }
  return pattern;
}

}  // namespace moonseed::testing
