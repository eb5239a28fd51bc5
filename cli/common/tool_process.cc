#include "cli/common/tool_process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

extern char** environ;

namespace moonseed::cli {
namespace {

// The first executable `name` in the directories of $PATH, or "".
std::string find_on_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  const std::string dirs = path ? path : "/usr/bin:/bin";
  size_t begin = 0;
  while (begin <= dirs.size()) {
    size_t end = dirs.find(':', begin);
    if (end == std::string::npos) end = dirs.size();
    const std::string dir = dirs.substr(begin, end - begin);
    const std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    begin = end + 1;
  }
  return "";
}

// An unnamed file for the tool's stderr: made in $TMPDIR (or /tmp) and unlinked at once.
int unnamed_file() {
  const char* tmp = std::getenv("TMPDIR");
  std::string name = std::string(tmp && *tmp ? tmp : "/tmp") + "/moonseed-tool-XXXXXX";
  const int fd = ::mkostemp(name.data(), O_CLOEXEC);
  if (fd < 0) throw std::runtime_error("cannot make a file for " + name + ": " + std::strerror(errno));
  ::unlink(name.c_str());
  return fd;
}

}  // namespace

bool ToolProcess::on_path(const std::string& program) { return !find_on_path(program).empty(); }

bool ToolProcess::succeeded(int status) { return WIFEXITED(status) && WEXITSTATUS(status) == 0; }

ToolProcess::ToolProcess(const std::string& program, const std::vector<std::string>& args,
                         const std::string& package) {
  const std::string path = find_on_path(program);
  if (path.empty()) {
    throw std::runtime_error(program + " is not installed (not found on PATH): install Debian's " + package +
                             " (apt-get install " + package + ")");
  }
  ::signal(SIGPIPE, SIG_IGN);  // a tool that exits early shows as EPIPE and its status
  stderr_ = unnamed_file();
  int in[2];
  if (::pipe2(in, O_CLOEXEC) != 0) {
    const std::string why = std::strerror(errno);
    ::close(stderr_);
    throw std::runtime_error("cannot make a pipe for " + program + ": " + why);
  }
  std::vector<std::string> all = {path};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in[0], 0);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, stderr_, 2);
  const int rc = ::posix_spawn(&pid_, path.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(in[0]);
  if (rc != 0) {
    ::close(in[1]);
    ::close(stderr_);
    throw std::runtime_error("cannot start " + path + ": " + std::strerror(rc));
  }
  stdin_ = in[1];
}

ToolProcess::~ToolProcess() {
  if (stdin_ >= 0) ::close(stdin_);
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
  }
  if (stderr_ >= 0) ::close(stderr_);
}

bool ToolProcess::write(const void* data, size_t size) {
  if (stdin_ < 0) return false;
  const char* at = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = ::write(stdin_, at, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    at += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

int ToolProcess::finish() {
  if (stdin_ >= 0) ::close(stdin_);
  stdin_ = -1;
  int status = 0;
  if (pid_ > 0) {
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
  }
  return status;
}

std::string ToolProcess::messages() const {
  std::string text;
  char buffer[4096];
  off_t at = 0;
  for (ssize_t n; text.size() < kMaxMessageBytes && (n = ::pread(stderr_, buffer, sizeof buffer, at)) > 0; at += n) {
    text.append(buffer, static_cast<size_t>(n));
  }
  if (text.size() > kMaxMessageBytes) text.resize(kMaxMessageBytes);
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

}  // namespace moonseed::cli
