// Real child processes for end-to-end tests: start `moonseed` with arguments,
// wait for it with a bound, signal it, read what it wrote.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace moonseed::testing {

class ChildProcess {
 public:
  // Starts `argv` with stdout and stderr appended to `log_path`.
  ChildProcess(const std::vector<std::string>& argv, const std::string& log_path);
  ~ChildProcess();  // SIGKILLs and reaps a child still running
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  void signal(int sig) const;
  // Exit code (or 128 + signal) once the child ended within `timeout_s`; nullopt otherwise.
  std::optional<int> wait(double timeout_s);
  bool running();

 private:
  pid_t pid_ = -1;
  std::optional<int> status_;
};

std::string read_file(const std::string& path);

// A command run to its end: its exit code (nullopt when it outlived `timeout_s` and was
// killed) and what it printed (stdout and stderr, appended to `log_path`).
struct Finished {
  std::optional<int> exit_code;
  std::string output;
};
Finished run_to_end(const std::vector<std::string>& argv, const std::string& log_path, double timeout_s);
// A fresh directory under the test temp dir.
std::string make_temp_dir(const std::string& prefix);
// Subdirectories of `dir` (run directories under a runs dir).
std::vector<std::string> list_dirs(const std::string& dir);

// metrics.jsonl rows as key -> number (strings and nulls are skipped).
// A row's numeric fields; an event row (one with an "event" key, such as the
// final "stop" row) also has event = 1.
using MetricsRow = std::map<std::string, double>;
std::vector<MetricsRow> read_metrics(const std::string& path);

// The event rows named `event` ("actor_joined", ...), numeric fields only.
std::vector<MetricsRow> read_events(const std::string& path, const std::string& event);

// The newest row's `key`, or -1 when there is no row or it lacks the key.
double last(const std::vector<MetricsRow>& rows, const std::string& key);

// `moonseed run SCRIPT` in a fresh runs directory: the command line with the
// test's fixed overrides, and the run directory and metrics it wrote.
// No test run stops on time: a CPU shared with other work would cut it short
// of what the test checks. It stops on frames (stop.frames: acting waits for
// training, so frames bound the optimizer steps too), on a signal or on
// `moonseed ctl RUN stop`, and the test waits for it with a generous bound
// that only a hung run reaches.
struct TrainingRun {
  TrainingRun(std::string script, std::vector<std::string> fixed, const std::string& prefix = "moonseed-e2e");
  // binary, "run", script, runs_dir=..., stop.seconds=0 (the shipped examples
  // set a time limit), the fixed overrides, then `extra`.
  std::vector<std::string> args(const std::vector<std::string>& extra) const;
  // The single run directory under runs_dir ("" while there is none, or several).
  std::string run_dir() const;
  std::vector<MetricsRow> metrics() const;
  // The learner's address (RUN_DIR/learner.address) once `actors` actors are
  // connected, within `timeout_s`; "" otherwise.
  std::string address_once_connected(int actors, double timeout_s) const;

  std::string script;
  std::vector<std::string> fixed;
  std::string runs_dir;
  std::string log;  // where a test sends the learner's output
};

// A frame count no test run reaches: with it (and stop.seconds=0, which
// TrainingRun::args puts first) a run lasts until the test stops it (a signal,
// `moonseed ctl RUN stop`), however slow the machine.
inline const std::string kUntilStopped = "stop.frames=1000000000";

// "stop.frames=N" for `--resume`: `more` frames past the newest row of `run`
// (the stop row of the run it resumes), whatever that run overshot its own limit by.
std::string frames_past_last_row(const TrainingRun& run, int64_t more);

// Writes `text` to a new file and renames it over `path`, as editors save.
void save_like_an_editor(const std::string& path, const std::string& text);

// `text` with the first `from` replaced by `to`; throws std::runtime_error when `from` is missing.
std::string replaced(std::string text, const std::string& from, const std::string& to);

// Polls `predicate` every 50 ms for at most `timeout_s`.
template <typename Predicate>
bool eventually(double timeout_s, Predicate predicate);

}  // namespace moonseed::testing

#include "tests/e2e/process_inl.h"
