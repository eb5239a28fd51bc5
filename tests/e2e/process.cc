#include "tests/e2e/process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <utility>

namespace moonseed::testing {

ChildProcess::ChildProcess(const std::vector<std::string>& argv, const std::string& log_path) {
  std::vector<char*> cargv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  pid_ = ::fork();
  if (pid_ < 0) throw std::runtime_error("fork failed");
  if (pid_ == 0) {
    int fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) {
      ::dup2(fd, STDOUT_FILENO);
      ::dup2(fd, STDERR_FILENO);
    }
    ::execv(cargv[0], cargv.data());
    ::_exit(127);
  }
}

ChildProcess::~ChildProcess() {
  if (running()) {
    ::kill(pid_, SIGKILL);
    wait(10);
  }
}

void ChildProcess::signal(int sig) const { ::kill(pid_, sig); }

bool ChildProcess::running() {
  if (status_) return false;
  int st = 0;
  pid_t r = ::waitpid(pid_, &st, WNOHANG);
  if (r == pid_) {
    status_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    return false;
  }
  return r == 0;
}

std::optional<int> ChildProcess::wait(double timeout_s) {
  eventually(timeout_s, [&] { return !running(); });
  return status_;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Finished run_to_end(const std::vector<std::string>& argv, const std::string& log_path, double timeout_s) {
  ChildProcess process(argv, log_path);
  Finished f;
  f.exit_code = process.wait(timeout_s);
  f.output = read_file(log_path);
  return f;
}

std::string make_temp_dir(const std::string& prefix) {
  const char* base = std::getenv("TMPDIR");
  std::string pattern = std::string(base ? base : "/tmp") + "/" + prefix + "-XXXXXX";
  std::vector<char> buf(pattern.begin(), pattern.end());
  buf.push_back('\0');
  if (!::mkdtemp(buf.data())) throw std::runtime_error("mkdtemp failed for " + pattern);
  return buf.data();
}

std::vector<std::string> list_dirs(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    if (e.is_directory()) out.push_back(e.path().string());
  }
  return out;
}

std::vector<MetricsRow> read_metrics(const std::string& path) {
  std::vector<MetricsRow> rows;
  std::ifstream in(path);
  std::string line;
  static const std::regex field("\"([a-z0-9_]+)\": (-?[0-9][0-9.eE+-]*)");
  while (std::getline(in, line)) {
    MetricsRow row;
    for (std::sregex_iterator it(line.begin(), line.end(), field), end; it != end; ++it) {
      row[(*it)[1].str()] = std::stod((*it)[2].str());
    }
    if (line.find("\"event\": ") != std::string::npos) row["event"] = 1;
    rows.push_back(std::move(row));
  }
  return rows;
}

std::vector<MetricsRow> read_events(const std::string& path, const std::string& event) {
  std::vector<MetricsRow> all = read_metrics(path);
  std::vector<MetricsRow> out;
  std::ifstream in(path);
  const std::string tag = "\"event\": \"" + event + "\"";
  size_t i = 0;
  for (std::string line; std::getline(in, line) && i < all.size(); ++i) {
    if (line.find(tag) != std::string::npos) out.push_back(all[i]);
  }
  return out;
}

void save_like_an_editor(const std::string& path, const std::string& text) {
  {
    std::ofstream out(path + ".swp");
    out << text;
  }
  std::filesystem::rename(path + ".swp", path);
}

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  // gtest reports the exception as the test's failure; no gtest here, the benches link this file.
  if (at == std::string::npos) throw std::runtime_error("replaced: text has no '" + from + "'");
  text.replace(at, from.size(), to);
  return text;
}

double last(const std::vector<MetricsRow>& rows, const std::string& key) {
  return rows.empty() || !rows.back().count(key) ? -1 : rows.back().at(key);
}

TrainingRun::TrainingRun(std::string script_path, std::vector<std::string> fixed_overrides, const std::string& prefix)
    : script(std::move(script_path)),
      fixed(std::move(fixed_overrides)),
      runs_dir(make_temp_dir(prefix)),
      log(runs_dir + "/learner.log") {}

std::vector<std::string> TrainingRun::args(const std::vector<std::string>& extra) const {
  std::vector<std::string> a = {MOONSEED_BINARY, "run", script, "runs_dir=" + runs_dir, "stop.seconds=0"};
  a.insert(a.end(), fixed.begin(), fixed.end());
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

std::string frames_past_last_row(const TrainingRun& run, int64_t more) {
  const double frames = last(run.metrics(), "frames");
  return "stop.frames=" + std::to_string(static_cast<int64_t>(std::max(0.0, frames)) + more);
}

std::string TrainingRun::run_dir() const {
  const std::vector<std::string> dirs = list_dirs(runs_dir);
  return dirs.size() == 1 ? dirs[0] : std::string();
}

std::vector<MetricsRow> TrainingRun::metrics() const { return read_metrics(run_dir() + "/metrics.jsonl"); }

std::string TrainingRun::address_once_connected(int actors, double timeout_s) const {
  std::string address;
  const bool up = eventually(timeout_s, [&] {
    if (run_dir().empty()) return false;
    address = read_file(run_dir() + "/learner.address");
    return !address.empty() && last(metrics(), "actors") == actors;
  });
  if (!up) return "";
  while (!address.empty() && address.back() == '\n') address.pop_back();
  return address;
}

}  // namespace moonseed::testing
