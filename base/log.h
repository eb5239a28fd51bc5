// Where library code tells the operator something: a connection closed for a
// reason, a training step skipped, recording that stopped. One line each,
// handed to a sink the program chooses; library code never writes to
// std::cerr or stderr itself.
//
// The default sink writes "moonseed: <text>" (or "moonseed <component>:
// <text>") and a newline to stderr. cli/ installs one that first ends a live
// progress line, so a message never lands in the middle of it.
//
// Thread-safety: log() may be called from any thread; the sink is called
// under one lock, so lines never interleave. set_log_sink() is thread-safe.
#pragma once

#include <functional>
#include <string>
#include <string_view>

namespace moonseed::base {

enum class Severity { kInfo, kWarning, kError };

struct LogLine {
  Severity severity = Severity::kInfo;
  std::string_view component;  // "" for the engine, "rpc", "actor 3", ...
  std::string_view text;       // one line, no trailing newline
};

using LogSink = std::function<void(const LogLine&)>;

// Replaces the sink and returns the previous one; an empty sink restores the default.
LogSink set_log_sink(LogSink sink);

void log(Severity severity, std::string_view component, std::string_view text);
inline void log_info(std::string_view text) { log(Severity::kInfo, "", text); }
inline void log_warning(std::string_view text) { log(Severity::kWarning, "", text); }
inline void log_error(std::string_view text) { log(Severity::kError, "", text); }

// "moonseed: text" or "moonseed rpc: text": the line the default sink writes.
std::string log_line_text(const LogLine& line);

}  // namespace moonseed::base
