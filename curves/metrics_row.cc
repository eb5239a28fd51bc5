#include "curves/metrics_row.h"

#include <charconv>
#include <stdexcept>

namespace moonseed::curves {
namespace {

// A cursor over the line; each read throws std::invalid_argument on text that is not JSON.
class Reader {
 public:
  explicit Reader(std::string_view text) : s_(text) {}

  void skip_space() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\r' || s_[i_] == '\n')) ++i_;
  }
  bool at_end() {
    skip_space();
    return i_ == s_.size();
  }
  char peek() {
    skip_space();
    if (i_ == s_.size()) throw std::invalid_argument("unexpected end");
    return s_[i_];
  }
  void expect(char c) {
    if (peek() != c) throw std::invalid_argument("unexpected character");
    ++i_;
  }
  bool take(char c) {
    if (peek() != c) return false;
    ++i_;
    return true;
  }

  std::string string() {
    expect('"');
    std::string out;
    while (true) {
      if (i_ >= s_.size()) throw std::invalid_argument("unterminated string");
      const char c = s_[i_++];
      if (c == '"') return out;
      if (c != '\\') {
        out += c;
        continue;
      }
      if (i_ >= s_.size()) throw std::invalid_argument("unterminated string");
      const char e = s_[i_++];
      switch (e) {
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        case 'r': out += '\r'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'u': {
          if (i_ + 4 > s_.size()) throw std::invalid_argument("bad escape");
          unsigned code = 0;
          const auto [end, ec] = std::from_chars(s_.data() + i_, s_.data() + i_ + 4, code, 16);
          if (ec != std::errc() || end != s_.data() + i_ + 4) throw std::invalid_argument("bad escape");
          i_ += 4;
          // Names and reasons the engine writes escape only control characters.
          out += code < 0x80 ? static_cast<char>(code) : '?';
          break;
        }
        default: out += e;
      }
    }
  }

  double number() {
    skip_space();
    double v = 0;
    const auto [end, ec] = std::from_chars(s_.data() + i_, s_.data() + s_.size(), v);
    if (ec != std::errc()) throw std::invalid_argument("bad number");
    i_ = static_cast<size_t>(end - s_.data());
    return v;
  }

  void word(std::string_view w) {
    skip_space();
    if (s_.substr(i_, w.size()) != w) throw std::invalid_argument("bad literal");
    i_ += w.size();
  }

  // Any value, thrown away (nested objects and lists of event rows).
  void skip_value() {
    const char c = peek();
    if (c == '"') {
      string();
    } else if (c == '{' || c == '[') {
      const char close = c == '{' ? '}' : ']';
      ++i_;
      if (take(close)) return;
      do {
        if (c == '{') {
          string();
          expect(':');
        }
        skip_value();
      } while (take(','));
      expect(close);
    } else if (c == 'n') {
      word("null");
    } else if (c == 't') {
      word("true");
    } else if (c == 'f') {
      word("false");
    } else {
      number();
    }
  }

 private:
  std::string_view s_;
  size_t i_ = 0;
};

}  // namespace

std::optional<MetricsRow> parse_metrics_row(std::string_view line) {
  try {
    Reader r(line);
    MetricsRow row;
    r.expect('{');
    if (!r.take('}')) {
      do {
        const std::string key = r.string();
        r.expect(':');
        const char c = r.peek();
        if (c == '-' || (c >= '0' && c <= '9')) {
          row.numbers[key] = r.number();
        } else if (c == '"' && key == "event") {
          row.event = r.string();
        } else if (c == 't' && key == kCountersKey) {
          r.word("true");
          row.counters = true;
        } else {
          r.skip_value();
        }
      } while (r.take(','));
      r.expect('}');
    }
    if (!r.at_end()) return std::nullopt;
    return row;
  } catch (const std::invalid_argument&) {
    return std::nullopt;
  }
}

bool is_point(const MetricsRow& row) { return row.event.empty() || row.counters; }

}  // namespace moonseed::curves
