#include "cli/tensorboard_sink.h"

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <optional>

namespace moonseed::cli {
namespace {

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

int64_t unix_seconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The number a field holds, if it is one (not a string, null, object or array).
std::optional<double> number(const std::string& json) {
  if (json.empty() || !(json[0] == '-' || (json[0] >= '0' && json[0] <= '9'))) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(json.c_str(), &end);
  if (end != json.c_str() + json.size() || !std::isfinite(v)) return std::nullopt;
  return v;
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
  std::string event;
  for (const auto& [key, value] : row.fields()) {
    if (key == "event" && value.size() >= 2 && value[0] == '"') event = value.substr(1, value.size() - 2);
    if (key == "frames") {
      if (const std::optional<double> frames = number(value)) frames_ = static_cast<int64_t>(*frames);
    }
  }
  const double now = unix_now();
  if (!event.empty()) {
    writer_.text("event/" + event, frames_, now, verbatim(row.to_json()));
    return;
  }
  for (const auto& [key, value] : row.fields()) {
    if (const std::optional<double> v = number(value)) writer_.scalar(key, frames_, now, *v);
  }
}

}  // namespace moonseed::cli
