// The user's side of a real pseudo-terminal, for tests of the console: type
// keys into it and wait, with a bound, for text to appear on it.
#pragma once

#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace moonseed::testing {

class PtyScreen {
 public:
  explicit PtyScreen(int master_fd);  // takes ownership
  ~PtyScreen();
  PtyScreen(const PtyScreen&) = delete;
  PtyScreen& operator=(const PtyScreen&) = delete;

  void type(const std::string& keys);
  // Reads until `text` appears after the end of the previous match; true when
  // it did within `timeout_s`. The next expect() searches after it. `before`
  // receives the text between the two matches.
  bool expect(const std::string& text, double timeout_s = 30, std::string* before = nullptr);
  // Reads what arrives within `timeout_ms` without matching anything.
  void drain(int timeout_ms);
  // Everything read so far / read after the last match (failure messages).
  const std::string& output() const { return output_; }
  std::string unmatched() const { return output_.substr(matched_); }
  // Hangs up: the other side's reads end.
  void close();
  // Reads what arrives within `timeout_ms`; false once the other side is gone.
  bool read_some(int timeout_ms);

 private:
  int fd_;
  std::string output_;
  size_t matched_ = 0;
};

// A fresh pseudo-terminal of the given size: its master as a screen, its
// slave fd (owned by the caller) for the code under test.
struct Pty {
  int master = -1;
  int slave = -1;
};
Pty open_pty(int columns, int rows = 24);

// A child process started with execve on a new pseudo-terminal (forkpty):
// its stdin, stdout and stderr are the terminal, which is its controlling tty.
class PtyProcess {
 public:
  // `env` entries ("NAME=value") are added to, or replace, this process's.
  PtyProcess(const std::vector<std::string>& argv, const std::vector<std::string>& env, int columns = 100);
  ~PtyProcess();  // SIGKILLs and reaps a child still running
  PtyProcess(const PtyProcess&) = delete;
  PtyProcess& operator=(const PtyProcess&) = delete;

  PtyScreen& screen() { return *screen_; }
  // Exit code (128 + signal when killed) once the child ended within `timeout_s`.
  std::optional<int> wait(double timeout_s);

 private:
  pid_t pid_ = -1;
  std::optional<int> status_;
  std::unique_ptr<PtyScreen> screen_;
};

// A child process run with `input` on a pipe as its stdin.
struct PipedRun {
  std::optional<int> exit_code;  // nullopt: killed after the timeout
  std::string out;
  std::string err;
};
PipedRun run_piped(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                   const std::string& input, double timeout_s);

// A fresh directory under the test temp dir.
std::string make_temp_dir(const std::string& prefix);

}  // namespace moonseed::testing
