// ToolProcess: a Debian tool that moonseed feeds through a pipe (ffmpeg for `moonseed eval
// --video`, gnuplot for `moonseed plot`). The program is looked up on PATH and started with
// posix_spawn: its stdin is a pipe this process writes, its stdout /dev/null, its stderr an
// unnamed file (so it can print any amount while we write, with no thread to drain it), read
// back for error messages.
//
//   ToolProcess gnuplot("gnuplot", {}, "gnuplot-nox");
//   if (!gnuplot.write(script.data(), script.size())) ...  // it stopped reading
//   const int status = gnuplot.finish();                 // waitpid status
//   if (failed(status)) throw ... + gnuplot.messages();
//
// Writing to a tool that exited gives EPIPE, not SIGPIPE: the caller ignores SIGPIPE (the
// constructor does so for the process). Not thread-safe; one owner.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <string>
#include <vector>

namespace moonseed::cli {

class ToolProcess {
 public:
  // Starts `program` (a name found on PATH) with `args`. Throws std::runtime_error: "PROGRAM is
  // not installed (not found on PATH): install Debian's PACKAGE (apt-get install PACKAGE)" when it
  // is not found, or with the reason when it cannot be started.
  ToolProcess(const std::string& program, const std::vector<std::string>& args, const std::string& package);
  ~ToolProcess();  // without finish(): kills and reaps the tool
  ToolProcess(const ToolProcess&) = delete;
  ToolProcess& operator=(const ToolProcess&) = delete;

  // True when a program named `program` is on PATH.
  static bool on_path(const std::string& program);

  // Writes all of `data` to the tool's stdin. False when it stopped reading (it exited or
  // closed stdin): finish() and messages() then tell why.
  bool write(const void* data, size_t size);

  // Closes the tool's stdin and waits for it to exit. Returns the waitpid status.
  int finish();

  // What the tool printed on stderr so far (its first kMaxMessageBytes), trailing newlines
  // removed ("" if nothing).
  static constexpr size_t kMaxMessageBytes = 16 * 1024;
  std::string messages() const;

  // A status from finish() of a clean exit (code 0).
  static bool succeeded(int status);

 private:
  pid_t pid_ = -1;
  int stdin_ = -1;
  int stderr_ = -1;
};

}  // namespace moonseed::cli
