#include "base/text.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>

namespace moonseed::base {

namespace {

// Fixed point from -5 up to this decimal exponent (exclusive), scientific outside.
constexpr int kFixedBelowExponent = 9;
constexpr int kFixedFromExponent = -5;

// `v` with `digits` significant digits, laid out as number_text says.
std::string layout(double v, int digits) {
  char buffer[48];
  std::snprintf(buffer, sizeof buffer, "%.*e", digits - 1, v);
  const char* e = std::strchr(buffer, 'e');
  const int exponent = std::atoi(e + 1);
  if (exponent >= kFixedFromExponent && exponent < kFixedBelowExponent) {
    std::snprintf(buffer, sizeof buffer, "%.*f", std::max(digits - 1 - exponent, 0), v);
    std::string text = buffer;
    if (text.find('.') != std::string::npos) {
      text.erase(text.find_last_not_of('0') + 1);
      if (text.back() == '.') text.pop_back();
    }
    return text;
  }
  std::string mantissa(static_cast<const char*>(buffer), e);
  if (mantissa.find('.') != std::string::npos) {
    mantissa.erase(mantissa.find_last_not_of('0') + 1);
    if (mantissa.back() == '.') mantissa.pop_back();
  }
  return mantissa + e;
}

std::string non_finite_text(double v) {
  if (std::isnan(v)) return "nan";
  return v > 0 ? "inf" : "-inf";
}

// Every whole number up to 2^53 is a double; beyond, neighbours are more than 1 apart.
bool whole_and_exact(double v) { return v == std::floor(v) && std::fabs(v) <= 9007199254740992.0; }

std::string whole_text(double v) {
  char buffer[24];
  std::snprintf(buffer, sizeof buffer, "%.0f", v);
  return buffer;
}

// The fewest digits whose text reads back as `v` through `read`.
template <typename T, typename Read>
std::string shortest(T v, Read read) {
  if (!std::isfinite(v)) return non_finite_text(v);
  if (whole_and_exact(v)) return whole_text(v);
  for (int digits = 1; digits < std::numeric_limits<T>::max_digits10; ++digits) {
    std::string text = layout(v, digits);
    if (read(text.c_str()) == v) return text;
  }
  return layout(v, std::numeric_limits<T>::max_digits10);
}

}  // namespace

std::string number_text(double v) {
  return shortest(v, [](const char* text) { return std::strtod(text, nullptr); });
}

std::string float_text(float v) {
  // Read back as a float, not through a double: that could round twice.
  return shortest(v, [](const char* text) { return std::strtof(text, nullptr); });
}

std::string number_text(double v, int digits) {
  if (!std::isfinite(v)) return non_finite_text(v);
  if (whole_and_exact(v)) return whole_text(v);
  return layout(v, std::clamp(digits, 1, 17));
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

std::string printable(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (const char ch : s) {
    const unsigned char c = static_cast<unsigned char>(ch);
    if (c >= 0x20 && c != 0x7f) {
      out += ch;
      continue;
    }
    char buf[8];
    std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(c));
    out += buf;
  }
  return out;
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

std::vector<std::string> parse_host_names(const std::string& list, std::string* problem) {
  std::vector<std::string> names;
  const auto label_ok = [](const std::string& label) {
    if (label.empty() || label.size() > 63 || label.front() == '-' || label.back() == '-') return false;
    return std::all_of(label.begin(), label.end(), [](char c) {
      return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
    });
  };
  for (size_t at = 0; at <= list.size();) {
    const size_t comma = std::min(list.find(',', at), list.size());
    std::string name = list.substr(at, comma - at);
    at = comma + 1;
    name.erase(0, name.find_first_not_of(' '));
    name.erase(name.find_last_not_of(' ') + 1);
    if (name.empty() && list.find_first_not_of(" ,") == std::string::npos) break;  // no names at all
    bool ok = !name.empty() && name.size() <= 253;
    for (size_t from = 0; ok && from <= name.size();) {
      const size_t dot = std::min(name.find('.', from), name.size());
      ok = label_ok(name.substr(from, dot - from));
      from = dot + 1;
    }
    if (!ok) {
      *problem = "\"" + name + "\" is not a host name (e.g. \"myhost.lab\": letters, digits, hyphens and dots; "
                 "no port, scheme or path)";
      return {};
    }
    names.push_back(name);
  }
  return names;
}

}  // namespace moonseed::base
