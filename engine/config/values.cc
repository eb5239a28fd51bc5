#include "engine/config/values.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include "base/constants.h"
#include "base/text.h"

namespace moonseed::engine {
namespace {

bool is_identifier(const std::string& s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (char c : s) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  }
  static const char* const kKeywords[] = {"and", "break", "do", "else", "elseif", "end",
                                          "false", "for", "function", "goto", "if", "in",
                                          "local", "nil", "not", "or", "repeat", "return",
                                          "then", "true", "until", "while"};
  for (const char* k : kKeywords) {
    if (s == k) return false;
  }
  return true;
}

std::string trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

// "{a, b}" -> "a, b"; text without braces is returned as is.
std::string strip_braces(const std::string& text) {
  const std::string t = trim(text);
  if (t.size() >= 2 && t.front() == '{' && t.back() == '}') return trim(t.substr(1, t.size() - 2));
  return t;
}

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> parts;
  if (trim(text).empty()) return parts;
  size_t start = 0;
  while (true) {
    const size_t comma = text.find(',', start);
    parts.push_back(trim(text.substr(start, comma - start)));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return parts;
}

bool parse_double(const std::string& text, double* out) {
  const std::string t = trim(text);
  if (t.empty()) return false;
  char* end = nullptr;
  *out = std::strtod(t.c_str(), &end);
  return end == t.c_str() + t.size() && std::isfinite(*out);
}

bool parse_integer(const std::string& text, int64_t* out) {
  double d = 0;
  if (!parse_double(text, &d) || d != std::floor(d) || std::fabs(d) > base::kMaxExactInteger) return false;
  *out = static_cast<int64_t>(d);
  return true;
}

[[noreturn]] void bad_text(const char* expected, const std::string& text) {
  throw std::invalid_argument(std::string("expected ") + expected + ", got '" + text + "'");
}

std::string interval_text(const FieldSchema& f) {
  const bool low = std::isfinite(f.min), high = std::isfinite(f.max);
  if (!low && !high) return "any";
  if (!high) return (f.min_exclusive ? "> " : ">= ") + format_number(f.min);
  if (!low) return "<= " + format_number(f.max);
  return (f.min_exclusive ? "(" : "[") + format_number(f.min) + ", " + format_number(f.max) + "]";
}

bool in_interval(const FieldSchema& f, double v) {
  return (f.min_exclusive ? v > f.min : v >= f.min) && v <= f.max;
}

std::string number_problem(const FieldSchema& f, double v, const char* kind) {
  if (!std::isfinite(v)) return std::string("expected a finite ") + kind + ", got " + format_number(v);
  if (in_interval(f, v)) return "";
  return std::string("expected ") + (kind[0] == 'i' ? "an " : "a ") + kind + " in " +
         interval_text(f) + ", got " + format_number(v);
}

}  // namespace

std::string format_number(double value) {
  // As Lua literals: the engine's text ("nan", "inf") would read back as names.
  if (std::isnan(value)) return "(0/0)";
  if (std::isinf(value)) return value > 0 ? "(1/0)" : "(-1/0)";
  return base::number_text(value);
}

std::string lua_literal(const FieldValue& value) {
  if (const auto* d = std::get_if<double>(&value)) return format_number(*d);
  if (const auto* i = std::get_if<int64_t>(&value)) return std::to_string(*i);
  if (const auto* s = std::get_if<std::string>(&value)) return base::lua_quote(*s);
  if (const auto* b = std::get_if<bool>(&value)) return *b ? "true" : "false";
  if (const auto* layers = std::get_if<LayerList>(&value)) return layer_list_lua(*layers);
  if (const auto* wrappers = std::get_if<WrapperList>(&value)) return wrapper_list_lua(*wrappers);
  std::string out = "{";
  if (const auto* list = std::get_if<std::vector<int64_t>>(&value)) {
    for (size_t k = 0; k < list->size(); ++k) out += (k ? ", " : "") + std::to_string((*list)[k]);
  } else {
    const NumberMap& map = std::get<NumberMap>(value);
    for (size_t k = 0; k < map.size(); ++k) {
      const std::string& key = map[k].first;
      out += k ? ", " : "";
      out += is_identifier(key) ? key : "[" + base::lua_quote(key) + "]";
      out += " = " + format_number(map[k].second);
    }
  }
  return out + "}";
}

std::string range_text(const FieldSchema& f) {
  std::string text;
  switch (f.type) {
    case FieldType::kNumber:
    case FieldType::kInteger:
      text = interval_text(f);
      break;
    case FieldType::kString:
      if (!f.allowed.empty()) {
        text = "one of:";
        for (size_t k = 0; k < f.allowed.size(); ++k) text += (k ? ", " : " ") + f.allowed[k];
      }
      break;
    case FieldType::kIntegerList:
      text = "each " + interval_text(f);
      break;
    case FieldType::kNumberMap:
    case FieldType::kBool:
    case FieldType::kLayerList:
    case FieldType::kWrapperList:
      break;
  }
  if (!f.rule_doc.empty()) text += (text.empty() ? "" : "; ") + f.rule_doc;
  return text.empty() ? "any" : text;
}

std::string check_value(const FieldSchema& f, const FieldValue& value) {
  std::string problem;
  switch (f.type) {
    case FieldType::kNumber:
      if (!std::holds_alternative<double>(value)) return "expected a number";
      problem = number_problem(f, std::get<double>(value), "number");
      break;
    case FieldType::kInteger:
      if (!std::holds_alternative<int64_t>(value)) return "expected an integer";
      problem = number_problem(f, static_cast<double>(std::get<int64_t>(value)), "integer");
      break;
    case FieldType::kString: {
      if (!std::holds_alternative<std::string>(value)) return "expected a string";
      const std::string& s = std::get<std::string>(value);
      if (f.allowed.empty() || std::count(f.allowed.begin(), f.allowed.end(), s) > 0) break;
      problem = "expected one of";
      for (size_t k = 0; k < f.allowed.size(); ++k) problem += (k ? ", " : " ") + base::lua_quote(f.allowed[k]);
      problem += ", got " + base::lua_quote(s);
      const std::string close = base::closest_name(s, f.allowed);
      if (!close.empty()) problem += "; did you mean " + base::lua_quote(close) + "?";
      break;
    }
    case FieldType::kBool:
      if (!std::holds_alternative<bool>(value)) return "expected a boolean";
      break;
    case FieldType::kIntegerList: {
      if (!std::holds_alternative<std::vector<int64_t>>(value)) return "expected a list of integers";
      const auto& list = std::get<std::vector<int64_t>>(value);
      for (size_t k = 0; k < list.size() && problem.empty(); ++k) {
        problem = number_problem(f, static_cast<double>(list[k]), "integer");
        if (!problem.empty()) problem = "element " + std::to_string(k + 1) + ": " + problem;
      }
      break;
    }
    case FieldType::kNumberMap: {
      if (!std::holds_alternative<NumberMap>(value)) return "expected a map of numbers";
      for (const auto& [key, number] : std::get<NumberMap>(value)) {
        problem = number_problem(f, number, "number");
        if (!problem.empty()) {
          problem = "entry " + key + ": " + problem;
          break;
        }
      }
      break;
    }
    case FieldType::kLayerList:
      if (!std::holds_alternative<LayerList>(value)) return "expected a list of layers";
      break;
    case FieldType::kWrapperList:
      if (!std::holds_alternative<WrapperList>(value)) return "expected a list of wrappers";
      break;
  }
  if (problem.empty() && f.rule) problem = f.rule(value);
  if (!problem.empty() && problem.find(", got ") == std::string::npos) {
    problem += ", got " + lua_literal(value);
  }
  return problem;
}

FieldValue parse_value(const FieldSchema& f, const std::string& text) {
  switch (f.type) {
    case FieldType::kNumber: {
      double d = 0;
      if (!parse_double(text, &d)) bad_text("a number", text);
      return d;
    }
    case FieldType::kInteger: {
      int64_t i = 0;
      if (!parse_integer(text, &i)) bad_text("an integer", text);
      return i;
    }
    case FieldType::kString: {
      const std::string t = trim(text);
      if (t.size() >= 2 && (t.front() == '"' || t.front() == '\'') && t.back() == t.front()) {
        return t.substr(1, t.size() - 2);
      }
      return text;
    }
    case FieldType::kBool:
      if (trim(text) == "true") return true;
      if (trim(text) == "false") return false;
      bad_text("true or false", text);
    case FieldType::kIntegerList: {
      std::vector<int64_t> list;
      for (const std::string& part : split_commas(strip_braces(text))) {
        int64_t i = 0;
        if (!parse_integer(part, &i)) bad_text("a comma-separated list of integers", text);
        list.push_back(i);
      }
      return list;
    }
    case FieldType::kNumberMap: {
      NumberMap map;
      for (const std::string& part : split_commas(strip_braces(text))) {
        const size_t eq = part.find('=');
        double d = 0;
        if (eq == std::string::npos || !is_identifier(trim(part.substr(0, eq))) ||
            !parse_double(part.substr(eq + 1), &d)) {
          bad_text("name=number pairs separated by commas", text);
        }
        map.emplace_back(trim(part.substr(0, eq)), d);
      }
      std::sort(map.begin(), map.end());
      return map;
    }
    case FieldType::kLayerList:
      throw std::invalid_argument("a list of layers is declared in the script (e.g. model.layers = "
                                  "{ms.nn.linear(64), ms.nn.relu()}), not as text; presets are model.kind=" +
                                  std::string("nature_cnn or impala_resnet"));
    case FieldType::kWrapperList:
      // The Welcome's text form: "frame_stack n=4;time_limit max_steps=100" ("" = none).
      return envs::parse_wrapper_list(trim(text));
  }
  throw std::logic_error("parse_value: unknown field type");
}

std::string layer_list_lua(const LayerList& layers) {
  std::string out = "{";
  for (size_t i = 0; i < layers.size(); ++i) {
    const models::LayerSpec& l = layers[i];
    out += i ? ", " : "";
    const std::vector<std::string> fields = models::LayerSpec::fields_of(l.kind);
    if (fields.empty()) {
      out += base::lua_quote(l.kind);
      continue;
    }
    out += "{kind = " + base::lua_quote(l.kind);
    for (const std::string& f : fields) out += ", " + f + " = " + std::to_string(l.field(f));
    out += "}";
  }
  return out + "}";
}

std::string layer_list_json(const LayerList& layers) {
  std::string out = "[";
  for (size_t i = 0; i < layers.size(); ++i) {
    const models::LayerSpec& l = layers[i];
    out += std::string(i ? ", " : "") + "{\"kind\": " + base::json_quote(l.kind);
    for (const std::string& f : models::LayerSpec::fields_of(l.kind)) {
      out += ", \"" + f + "\": " + std::to_string(l.field(f));
    }
    out += "}";
  }
  return out + "]";
}

std::string wrapper_list_lua(const WrapperList& wrappers) {
  std::string out = "{";
  for (size_t i = 0; i < wrappers.size(); ++i) {
    out += std::string(i ? ", " : "") + "{kind = " + base::lua_quote(wrappers[i].kind);
    for (const auto& [name, value] : wrappers[i].params) out += ", " + name + " = " + format_number(value);
    out += "}";
  }
  return out + "}";
}

std::string wrapper_list_json(const WrapperList& wrappers) {
  std::string out = "[";
  for (size_t i = 0; i < wrappers.size(); ++i) {
    out += std::string(i ? ", " : "") + "{\"kind\": " + base::json_quote(wrappers[i].kind);
    for (const auto& [name, value] : wrappers[i].params) out += ", \"" + name + "\": " + format_number(value);
    out += "}";
  }
  return out + "]";
}

std::string json_value(const FieldValue& value) {
  const auto number = [](double v) { return std::isfinite(v) ? format_number(v) : std::string("null"); };
  if (const double* d = std::get_if<double>(&value)) return number(*d);
  if (const int64_t* i = std::get_if<int64_t>(&value)) return std::to_string(*i);
  if (const std::string* s = std::get_if<std::string>(&value)) return base::json_quote(*s);
  if (const bool* b = std::get_if<bool>(&value)) return *b ? "true" : "false";
  if (const auto* list = std::get_if<std::vector<int64_t>>(&value)) {
    std::string out = "[";
    for (size_t k = 0; k < list->size(); ++k) out += (k ? ", " : "") + std::to_string((*list)[k]);
    return out + "]";
  }
  if (const auto* layers = std::get_if<LayerList>(&value)) return layer_list_json(*layers);
  if (const auto* wrappers = std::get_if<WrapperList>(&value)) return wrapper_list_json(*wrappers);
  const NumberMap& map = std::get<NumberMap>(value);
  std::string out = "{";
  for (size_t k = 0; k < map.size(); ++k) {
    out += (k ? ", " : "") + base::json_quote(map[k].first) + ": " + number(map[k].second);
  }
  return out + "}";
}

std::string env_text(const EnvConfig& env) {
  if (!env.plugin.empty()) return "plugin " + env.plugin + " (env " + env.id + ")";
  if (!env.python.empty()) return "Python env " + env.python + " (env " + env.id + ")";
  return "env " + env.id;
}

}  // namespace moonseed::engine
