// metrics.jsonl: one JSON object per log tick, appended and flushed per line so
// a killed learner loses at most the line being written.
//
// Not thread-safe; the control thread owns it.
#pragma once

#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace moonseed::engine {

// One row: ordered keys with numbers or strings. Non-finite numbers are written
// as null (JSON has no NaN).
class MetricsRow {
 public:
  MetricsRow& add(const std::string& key, double value);
  MetricsRow& add(const std::string& key, const std::string& value);
  // `json` must already be valid JSON (an object, an array, ...).
  MetricsRow& add_json(const std::string& key, std::string json);
  std::string to_json() const;

 private:
  std::vector<std::pair<std::string, std::string>> fields_;  // key, encoded JSON value
};

class MetricsLog {
 public:
  // Opens `path` for appending (resumed runs keep their history).
  // Throws std::runtime_error naming the path when it cannot be opened.
  explicit MetricsLog(const std::string& path);
  ~MetricsLog();
  MetricsLog(const MetricsLog&) = delete;
  MetricsLog& operator=(const MetricsLog&) = delete;

  // Returns false (and keeps going) when the write fails, e.g. on a full disk.
  bool append(const MetricsRow& row);

 private:
  std::FILE* file_;
};

}  // namespace moonseed::engine
