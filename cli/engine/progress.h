// The live progress line of `moonseed run`: rewritten in place on a terminal,
// one line per tick otherwise (logs, CI). While it exists it is the log sink
// (base/log.h): a message from any thread first ends an in-place line, so it
// never lands in the middle of one.
//
// Thread-safety: update/finish/set_enabled from the control thread; log
// lines from any thread. Lock order: base/log's lock (held while the sink
// runs) -> mu_; nothing logs while holding mu_.
#pragma once

#include <string>

#include "base/log.h"
#include "base/mutex.h"
#include "engine/learner/stats.h"

namespace moonseed::cli {

class Progress {
 public:
  explicit Progress(bool enabled);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;
  // `actors_note` follows "actors N/M": the local slots that back off, are
  // parked or were hung (cli/engine/local_actors.h slot_note), "" when all is well.
  void update(double elapsed_s, const engine::LearnerStats& s, double fps, int actors_expected,
              const std::string& actors_note) EXCLUDES(mu_);
  // Ends an in-place line so later output starts on a fresh line.
  void finish() EXCLUDES(mu_);
  void set_enabled(bool enabled) { enabled_ = enabled; }

 private:
  bool enabled_;
  const bool tty_;
  base::Mutex mu_;  // orders the progress line and log lines on stderr
  bool open_line_ GUARDED_BY(mu_) = false;  // an in-place line is on screen
  base::LogSink previous_sink_;
};

// 1234567 -> "1.23M", 0.5 -> "0.5", NaN -> "-".
std::string format_count(double v);
// base::number_text at 4 significant digits: -500 -> "-500", 21.53333 -> "21.53",
// 0.000123 -> "0.000123"; NaN -> "-".
std::string format_number(double v);

}  // namespace moonseed::cli
