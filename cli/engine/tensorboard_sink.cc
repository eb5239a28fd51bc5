#include "cli/engine/tensorboard_sink.h"

#include <chrono>
#include <cmath>
#include <optional>

#include "curves/metrics_row.h"

namespace moonseed::cli {
namespace {

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

int64_t unix_seconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// TensorBoard's text plugin renders Markdown: a code block shows the text as it is.
std::string verbatim(const std::string& text) {
  return "```\n" + text + (text.empty() || text.back() != '\n' ? "\n" : "") + "```";
}

}  // namespace

TensorboardSink::TensorboardSink(const std::string& run_dir, const std::string& config_text)
    : writer_(observe::TfEventsWriter::new_file_path(run_dir, unix_seconds())) {
  writer_.text("config", 0, unix_now(), verbatim(config_text));
  writer_.flush();
}

void TensorboardSink::row(const engine::MetricsRow& row) {
  // Read back as plot and the dashboard read metrics.jsonl, so the three agree on what a point is.
  const std::string json = row.to_json();
  const std::optional<curves::MetricsRow> parsed = curves::parse_metrics_row(json);
  if (!parsed) return;  // MetricsRow writes JSON: not reached
  const auto frames = parsed->numbers.find("frames");
  if (frames != parsed->numbers.end()) frames_ = static_cast<int64_t>(frames->second);
  const double now = unix_now();
  if (!parsed->event.empty()) writer_.text("event/" + parsed->event, frames_, now, verbatim(json));
  if (!curves::is_point(*parsed)) return;
  for (const auto& [key, value] : parsed->numbers) {
    if (std::isfinite(value)) writer_.scalar(key, frames_, now, value);
  }
}

}  // namespace moonseed::cli
