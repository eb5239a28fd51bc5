#include "cli/engine/progress.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>

#include "base/text.h"

namespace moonseed::cli {

Progress::Progress(bool enabled) : enabled_(enabled), tty_(::isatty(STDERR_FILENO) != 0) {
  previous_sink_ = base::set_log_sink([this](const base::LogLine& line) {
    const std::string text = base::log_line_text(line) + "\n";
    base::MutexLock lock(mu_);
    if (open_line_) std::fputc('\n', stderr);
    open_line_ = false;
    std::fwrite(text.data(), 1, text.size(), stderr);
    std::fflush(stderr);
  });
}

Progress::~Progress() {
  base::set_log_sink(std::move(previous_sink_));
  finish();
}

std::string format_count(double v) {
  if (!std::isfinite(v)) return "-";
  char buf[32];
  double a = std::fabs(v);
  if (a >= 1e9) {
    std::snprintf(buf, sizeof buf, "%.2fG", v / 1e9);
  } else if (a >= 1e6) {
    std::snprintf(buf, sizeof buf, "%.2fM", v / 1e6);
  } else if (a >= 1e4) {
    std::snprintf(buf, sizeof buf, "%.1fk", v / 1e3);
  } else {
    std::snprintf(buf, sizeof buf, "%.0f", v);
  }
  return buf;
}

std::string format_number(double v) {
  return std::isfinite(v) ? base::number_text(v, 4) : "-";
}

void Progress::update(double elapsed_s, const engine::LearnerStats& s, double fps, int actors_expected,
                      const std::string& actors_note) {
  if (!enabled_) return;
  char line[256];
  std::snprintf(line, sizeof line,
                "[%7.1fs] frames %7s  fps %6s  episodes %6s  return %7s  steps %6s  loss %8s  "
                "actors %d/%d%s",
                elapsed_s, format_count(static_cast<double>(s.frames)).c_str(),
                format_count(fps).c_str(), format_count(static_cast<double>(s.episodes)).c_str(),
                format_number(s.return_mean).c_str(),
                format_count(static_cast<double>(s.optimizer_steps)).c_str(),
                format_number(s.loss_total).c_str(), s.actors_connected, actors_expected, actors_note.c_str());
  if (s.reward_shaping) {
    const size_t used = std::strlen(line);
    std::snprintf(line + used, sizeof line - used, "  shaped %s", format_number(s.shaped_return_mean).c_str());
  }
  if (s.eval_episodes > 0) {
    const size_t used = std::strlen(line);
    std::snprintf(line + used, sizeof line - used, "  eval %s", format_number(s.eval_return_mean).c_str());
  }
  base::MutexLock lock(mu_);
  if (tty_) {
    std::fprintf(stderr, "\r%s\033[K", line);
    open_line_ = true;
  } else {
    std::fprintf(stderr, "%s\n", line);
  }
  std::fflush(stderr);
}

void Progress::finish() {
  base::MutexLock lock(mu_);
  if (open_line_) std::fputc('\n', stderr);
  open_line_ = false;
}

}  // namespace moonseed::cli
