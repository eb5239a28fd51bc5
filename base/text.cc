#include "base/text.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace moonseed::base {

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

namespace {

// Escapes shared by JSON and Lua; `control` writes any other control byte.
template <typename Control>
std::string quote(std::string_view s, Control control) {
  std::string out = "\"";
  out.reserve(s.size() + 2);
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (!control(c, out)) out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

}  // namespace

std::string json_quote(std::string_view s) {
  return quote(s, [](unsigned char c, std::string& out) {
    if (c >= 0x20) return false;
    char buf[8];
    std::snprintf(buf, sizeof buf, "\\u%04x", c);
    out += buf;
    return true;
  });
}

std::string lua_quote(std::string_view s) {
  return quote(s, [](unsigned char c, std::string& out) {
    if (c >= 0x20 && c != 0x7f) return false;
    char buf[8];
    std::snprintf(buf, sizeof buf, "\\%03u", static_cast<unsigned>(c));
    out += buf;
    return true;
  });
}

std::string shape_text(const std::vector<int64_t>& dims, std::string_view separator) {
  std::string out = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) out += separator;
    out += std::to_string(dims[i]);
  }
  return out + "]";
}

std::string join(const std::vector<std::string>& items, std::string_view separator) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) out += separator;
    out += items[i];
  }
  return out;
}

size_t edit_distance(std::string_view a, std::string_view b) {
  // d[i][j]: distance between the first i chars of a and the first j of b.
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[a.size()][b.size()];
}

std::string closest_name(std::string_view name, const std::vector<std::string>& candidates) {
  const size_t limit = std::clamp<size_t>(name.size() / 3, 1, 3);
  std::string best;
  size_t best_distance = limit + 1;
  for (const std::string& c : candidates) {
    const size_t d = edit_distance(name, c);
    if (d < best_distance) {
      best = c;
      best_distance = d;
    }
  }
  if (!best.empty() || name.size() < 3) return best;
  for (const std::string& c : candidates) {
    if (c.size() >= 3 && (c.compare(0, name.size(), name) == 0 || name.compare(0, c.size(), c) == 0)) {
      return c;
    }
  }
  return "";
}

}  // namespace moonseed::base
