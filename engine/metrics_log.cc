#include "engine/metrics_log.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

namespace moonseed::engine {

std::string json_quote(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

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
  fields_.emplace_back(key, json_quote(value));
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
    out += json_quote(fields_[i].first) + ": " + fields_[i].second;
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

std::string number_text(double v) {
  char buffer[40];
  if (v == std::floor(v) && std::fabs(v) < 1e15) {
    std::snprintf(buffer, sizeof buffer, "%.0f", v);
    return buffer;
  }
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buffer, sizeof buffer, "%.*g", precision, v);
    if (std::strtod(buffer, nullptr) == v) break;
  }
  return buffer;
}

}  // namespace moonseed::engine
