// One line of metrics.jsonl read back: its numbers by key, and its event name.
//
// A small JSON reader for what the engine writes (docs/metrics.md): a flat
// object whose values are numbers, strings, null, or (in event rows) nested
// objects and lists, which are skipped. Pure functions; thread-safe.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace moonseed::curves {

struct MetricsRow {
  std::map<std::string, double> numbers;  // numeric values only; null and text are left out
  std::string event;                      // "" for a tick row, else the row's "event"
};

// The row, or nullopt when `line` is not one whole JSON object (a torn line).
std::optional<MetricsRow> parse_metrics_row(std::string_view line);

}  // namespace moonseed::curves
