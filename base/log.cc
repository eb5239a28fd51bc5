#include "base/log.h"

#include <cstdio>

#include "base/mutex.h"

namespace moonseed::base {
namespace {

void write_to_stderr(const LogLine& line) {
  const std::string text = log_line_text(line) + "\n";
  std::fwrite(text.data(), 1, text.size(), stderr);
  std::fflush(stderr);
}

struct Logger {
  // Held while the sink runs, so a sink that takes a lock of its own (cli's
  // progress line) takes it after this one, and must not log itself.
  Mutex mu;
  LogSink sink GUARDED_BY(mu);  // empty = write_to_stderr
};

Logger& logger() {
  static Logger* instance = new Logger;  // never destroyed: threads may log during exit
  return *instance;
}

}  // namespace

LogSink set_log_sink(LogSink sink) {
  Logger& l = logger();
  MutexLock lock(l.mu);
  std::swap(l.sink, sink);
  return sink;
}

void log(Severity severity, std::string_view component, std::string_view text) {
  Logger& l = logger();
  const LogLine line{severity, component, text};
  MutexLock lock(l.mu);
  if (l.sink) {
    l.sink(line);
  } else {
    write_to_stderr(line);
  }
}

std::string log_line_text(const LogLine& line) {
  std::string out = "moonseed";
  if (!line.component.empty()) {
    out += ' ';
    out += line.component;
  }
  out += ": ";
  out += line.text;
  return out;
}

}  // namespace moonseed::base
