// One line of metrics.jsonl read back: its numbers by key, its event name,
// and whether it is a point of the run's metrics (is_point: the one rule that
// `moonseed plot`, the dashboard and the TensorBoard file all follow).
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

// The key a writer sets to `true` on an event row that also carries a log
// tick's counters (the run's final "stop" row, docs/metrics.md). Only such a
// mark makes an event row a point: an event's own fields may share a name
// with a metric and mean something else ("resume" has the checkpoint's frames).
inline constexpr const char kCountersKey[] = "counters";

struct MetricsRow {
  std::map<std::string, double> numbers;  // numeric values only; null and text are left out
  std::string event;                      // "" for a tick row, else the row's "event"
  bool counters = false;                  // the row has "counters": true
};

// Whether the row is a point of the metrics it has numbers for: a tick row (no
// "event" key), or an event row marked with "counters": true.
bool is_point(const MetricsRow& row);

// The row, or nullopt when `line` is not one whole JSON object (a torn line).
std::optional<MetricsRow> parse_metrics_row(std::string_view line);

}  // namespace moonseed::curves
