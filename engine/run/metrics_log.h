// metrics.jsonl: one JSON object per log tick, appended whole or not at all,
// so the file is always a sequence of complete lines.
//
// Failures: the constructor throws when the file cannot be opened. append()
// never throws: a row that cannot be written whole (a full disk, a file size
// limit) is cut back off the file with ftruncate and dropped, and append()
// returns false. The first failure of an outage is logged once (base/log.h)
// with its reason, and the first row written after it once more with the
// number of rows dropped; the run goes on meanwhile. A last line left torn
// by an older build is cut off when the file is opened, and logged.
//
// Not thread-safe; the control thread owns it.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
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
  // The keys and their encoded JSON values, in order.
  const std::vector<std::pair<std::string, std::string>>& fields() const { return fields_; }

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

  // Appends the row with one write() (and one more only to learn why a short
  // one was short). Returns false when it cannot be written whole: the row is
  // dropped and the file keeps whole rows only.
  bool append(const MetricsRow& row);
  // The same for a row that must not be lost to a passing outage (the run's
  // stop row): when it cannot be written, calls `waiting` once and tries again
  // every 100 ms for up to `patience`; only then is it dropped. Returns
  // whether it was written.
  bool append_patiently(const MetricsRow& row, std::chrono::milliseconds patience,
                        const std::function<void()>& waiting);

  // Rows dropped since the file was opened.
  int64_t dropped_rows() const { return dropped_total_; }

  // Also hands every row appended to `listener`, before it is written and
  // whether or not it can be (cli/ sends them to TensorBoard). It must not throw.
  void set_listener(std::function<void(const MetricsRow&)> listener) { listener_ = std::move(listener); }

 private:
  void cut_torn_last_line();
  // Writes `line` whole, or cuts what it wrote back off; 0 or the errno that stopped it.
  int write_line(const std::string& line);

  const std::string path_;
  int fd_ = -1;
  int64_t dropped_ = 0;        // rows dropped in the current outage
  int64_t dropped_total_ = 0;  // rows dropped since opening
  std::function<void(const MetricsRow&)> listener_;
};

}  // namespace moonseed::engine
