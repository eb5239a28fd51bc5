// The live progress line of `moonseed run`: rewritten in place on a terminal,
// one line per tick otherwise (logs, CI).
#pragma once

#include <string>

#include "engine/learner.h"

namespace moonseed::cli {

class Progress {
 public:
  explicit Progress(bool enabled);
  void update(double elapsed_s, const engine::LearnerStats& s, double fps, int actors_expected);
  // Ends an in-place line so later output starts on a fresh line.
  void finish();
  void set_enabled(bool enabled) { enabled_ = enabled; }

 private:
  bool enabled_;
  bool tty_;
  bool open_line_ = false;
};

// 1234567 -> "1.23M", 0.5 -> "0.5", NaN -> "-".
std::string format_count(double v);
std::string format_number(double v);

}  // namespace moonseed::cli
