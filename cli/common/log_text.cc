#include "cli/common/log_text.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <limits>
#include <type_traits>

#include "base/text.h"

namespace moonseed::cli {
namespace {

namespace ex = explog;

// Reads `count` digits of `text` at `pos`, advancing it; -1 when they are not all digits.
int read_digits(const std::string& text, size_t& pos, size_t count) {
  if (pos + count > text.size()) return -1;
  int v = 0;
  for (size_t i = 0; i < count; ++i) {
    const char c = text[pos + i];
    if (c < '0' || c > '9') return -1;
    v = v * 10 + (c - '0');
  }
  pos += count;
  return v;
}

// JSON's words for what base::number_text calls nan and inf: Python's json module reads them.
template <typename T>
std::string shortest(T v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  if constexpr (std::is_same_v<T, float>) {
    return base::float_text(v);
  } else {
    return base::number_text(v);
  }
}

template <typename T>
T load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

void append_value(std::string& out, ex::DType dtype, const uint8_t* p) {
  switch (dtype) {
    case ex::DType::kU8:
      out += std::to_string(*p);
      return;
    case ex::DType::kI32:
      out += std::to_string(load<int32_t>(p));
      return;
    case ex::DType::kI64:
      out += std::to_string(load<int64_t>(p));
      return;
    case ex::DType::kF32:
      out += shortest(load<float>(p));
      return;
    case ex::DType::kF64:
      out += shortest(load<double>(p));
      return;
  }
}

void append_dimension(std::string& out, const ex::ColumnSpec& column, size_t dim, const uint8_t*& data) {
  if (dim == column.shape.size()) {
    append_value(out, column.dtype, data);
    data += ex::dtype_size(column.dtype);
    return;
  }
  out += '[';
  for (int64_t i = 0; i < column.shape[dim]; ++i) {
    if (i > 0) out += ',';
    append_dimension(out, column, dim + 1, data);
  }
  out += ']';
}

}  // namespace

std::optional<int64_t> parse_integer(const std::string& text, int64_t min, int64_t max) {
  if (text.empty() || !(text[0] == '-' || (text[0] >= '0' && text[0] <= '9'))) return std::nullopt;
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (*end != '\0' || errno == ERANGE || v < min || v > max) return std::nullopt;
  return static_cast<int64_t>(v);
}

std::optional<int64_t> parse_wall_time(const std::string& text) {
  if (text.find('T') == std::string::npos) {
    return parse_integer(text, std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max());
  }
  size_t pos = 0;
  bool ok = true;
  auto field = [&](size_t digits, char separator) {
    const int v = read_digits(text, pos, digits);
    if (v < 0 || (separator != 0 && (pos >= text.size() || text[pos++] != separator))) ok = false;
    return v;
  };
  std::tm tm{};
  tm.tm_year = field(4, '-') - 1900;
  if (ok) tm.tm_mon = field(2, '-') - 1;
  if (ok) tm.tm_mday = field(2, 'T');
  if (ok) tm.tm_hour = field(2, ':');
  if (ok) tm.tm_min = field(2, ':');
  if (ok) tm.tm_sec = field(2, 0);
  if (!ok || tm.tm_mon < 0 || tm.tm_mon > 11 || tm.tm_mday < 1 || tm.tm_mday > 31 || tm.tm_hour > 23 ||
      tm.tm_min > 59 || tm.tm_sec > 60) {
    return std::nullopt;
  }
  int64_t fraction_ns = 0;
  if (pos < text.size() && text[pos] == '.') {
    const size_t start = ++pos;
    int64_t scale = 100000000;
    while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9' && pos - start < 9) {
      fraction_ns += (text[pos] - '0') * scale;
      scale /= 10;
      ++pos;
    }
    if (pos == start) return std::nullopt;
  }
  if (pos < text.size() && text[pos] == 'Z') ++pos;
  if (pos != text.size()) return std::nullopt;
  return static_cast<int64_t>(timegm(&tm)) * 1000000000 + fraction_ns;
}

std::string format_wall_time(int64_t ns) {
  int64_t seconds = ns / 1000000000;
  int64_t rest = ns % 1000000000;
  if (rest < 0) {
    rest += 1000000000;
    --seconds;
  }
  const std::time_t t = static_cast<std::time_t>(seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%S", &tm);
  char out[64];
  std::snprintf(out, sizeof out, "%s.%09lldZ", date, static_cast<long long>(rest));
  return out;
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (const char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

const char* json_bool(bool b) { return b ? "true" : "false"; }

std::string shortest_text(float v) { return shortest(v); }
std::string shortest_text(double v) { return shortest(v); }

void append_step_json(std::string& out, const ex::ColumnSpec& column, const uint8_t* data) {
  append_dimension(out, column, 0, data);
}

}  // namespace moonseed::cli
