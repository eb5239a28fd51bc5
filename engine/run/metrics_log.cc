#include "engine/run/metrics_log.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "base/text.h"

namespace moonseed::engine {

MetricsRow& MetricsRow::add(const std::string& key, double value) {
  std::string encoded = "null";
  if (std::isfinite(value)) {
    char buf[32];
    // 10 significant digits: exact for counters below 1e10, plenty for losses.
    std::snprintf(buf, sizeof buf, "%.10g", value);
    encoded = buf;
  }
  fields_.emplace_back(key, std::move(encoded));
  return *this;
}

MetricsRow& MetricsRow::add(const std::string& key, const std::string& value) {
  fields_.emplace_back(key, base::json_quote(value));
  return *this;
}

MetricsRow& MetricsRow::add_json(const std::string& key, std::string json) {
  fields_.emplace_back(key, std::move(json));
  return *this;
}

std::string MetricsRow::to_json() const {
  std::string out = "{";
  for (size_t i = 0; i < fields_.size(); ++i) {
    if (i) out += ", ";
    out += base::json_quote(fields_[i].first) + ": " + fields_[i].second;
  }
  return out + "}";
}

MetricsLog::MetricsLog(const std::string& path) : file_(std::fopen(path.c_str(), "a")) {
  if (!file_) throw std::runtime_error("cannot open " + path + ": " + std::strerror(errno));
}

MetricsLog::~MetricsLog() { std::fclose(file_); }

bool MetricsLog::append(const MetricsRow& row) {
  std::string line = row.to_json() + "\n";
  bool ok = std::fwrite(line.data(), 1, line.size(), file_) == line.size();
  return std::fflush(file_) == 0 && ok;
}

}  // namespace moonseed::engine
