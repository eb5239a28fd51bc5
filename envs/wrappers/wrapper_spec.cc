#include "envs/wrappers/wrapper_spec.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <stdexcept>

#include "base/text.h"

namespace moonseed::envs {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr size_t kMaxTextChars = 4096;

std::string interval(const WrapperParam& p) {
  if (!std::isfinite(p.min) && !std::isfinite(p.max)) return "any finite number";
  return std::string(p.integer ? "an integer" : "a number") + " in [" + base::number_text(p.min) + ", " +
         base::number_text(p.max) + "]";
}

std::string param_problem(const WrapperParam& p, double v) {
  const bool ok = std::isfinite(v) && v >= p.min && v <= p.max && (!p.integer || v == std::floor(v));
  if (ok) return "";
  return std::string(p.name) + " must be " + interval(p) + ", got " + base::number_text(v);
}

// Rules between parameters of one wrapper.
std::string kind_rule(const WrapperSpec& w) {
  if (w.kind == "clip_reward" && w.param("low") > w.param("high")) {
    return "low must not exceed high, got low = " + base::number_text(w.param("low")) +
           ", high = " + base::number_text(w.param("high"));
  }
  if (w.kind == "scale_obs" && w.param("scale") == 0) return "scale must not be 0";
  return "";
}

[[noreturn]] void bad_text(const std::string& what) {
  throw std::invalid_argument("env wrappers text: " + what);
}

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    const size_t at = text.find(separator, start);
    parts.push_back(text.substr(start, at == std::string::npos ? std::string::npos : at - start));
    if (at == std::string::npos) return parts;
    start = at + 1;
  }
}

}  // namespace

const std::vector<WrapperKind>& wrapper_kinds() {
  static const std::vector<WrapperKind> kinds = {
      {"frame_stack", {{"n", 4, 1, 64, true, false}}},
      {"action_repeat", {{"k", 4, 1, 100, true, false}, {"max_pool", -1, -1, 1, true, false}}},
      {"time_limit", {{"max_steps", 0, 1, 1e9, true, true}}},
      {"clip_reward", {{"low", -1, -kInf, kInf, false, false}, {"high", 1, -kInf, kInf, false, false}}},
      {"sticky_actions", {{"p", 0.25, 0, 1, false, false}}},
      {"scale_obs", {{"scale", 1.0 / 255.0, -kInf, kInf, false, false}, {"offset", 0, -kInf, kInf, false, false}}},
  };
  return kinds;
}

const WrapperKind* find_wrapper_kind(const std::string& kind) {
  for (const WrapperKind& k : wrapper_kinds()) {
    if (kind == k.name) return &k;
  }
  return nullptr;
}

std::string wrapper_kind_names() {
  std::vector<std::string> names;
  for (const WrapperKind& k : wrapper_kinds()) names.push_back(k.name);
  return base::join(names);
}

double WrapperSpec::param(const std::string& name) const {
  for (const auto& [n, v] : params) {
    if (n == name) return v;
  }
  throw std::logic_error("wrapper " + kind + " has no parameter " + name);
}

std::string WrapperSpec::describe() const {
  std::string out = kind + "(";
  for (size_t i = 0; i < params.size(); ++i) {
    out += (i ? ", " : "") + params[i].first + " = " + base::number_text(params[i].second);
  }
  return out + ")";
}

std::string make_wrapper(const std::string& kind, const std::vector<std::pair<std::string, double>>& given,
                         WrapperSpec* out) {
  const WrapperKind* k = find_wrapper_kind(kind);
  if (k == nullptr) {
    std::vector<std::string> names;
    for (const WrapperKind& known : wrapper_kinds()) names.push_back(known.name);
    const std::string close = base::closest_name(kind, names);
    return "unknown wrapper " + base::lua_quote(kind) +
           (close.empty() ? "" : "; did you mean " + base::lua_quote(close) + "?") + " (known: " +
           wrapper_kind_names() + ")";
  }
  std::vector<std::string> names;
  for (const WrapperParam& p : k->params) names.push_back(p.name);
  for (size_t i = 0; i < given.size(); ++i) {
    bool known = false;
    for (const WrapperParam& p : k->params) known = known || given[i].first == p.name;
    if (!known) {
      const std::string close = base::closest_name(given[i].first, names);
      return "unknown parameter " + base::lua_quote(given[i].first) +
             (close.empty() ? "" : "; did you mean " + base::lua_quote(close) + "?") + " (" + kind +
             " takes " + base::join(names) + ")";
    }
    for (size_t j = 0; j < i; ++j) {
      if (given[j].first == given[i].first) return given[i].first + " is given twice";
    }
  }
  WrapperSpec w;
  w.kind = kind;
  for (const WrapperParam& p : k->params) {
    bool found = false;
    double value = p.default_value;
    for (const auto& [name, v] : given) {
      if (name == p.name) found = true, value = v;
    }
    if (!found && p.required) return kind + " needs " + p.name;
    w.params.emplace_back(p.name, value);
  }
  *out = std::move(w);
  return "";
}

std::string wrapper_problem(const WrapperSpec& w) {
  const WrapperKind* k = find_wrapper_kind(w.kind);
  WrapperSpec rebuilt;
  const std::string problem = make_wrapper(w.kind, w.params, &rebuilt);
  if (!problem.empty()) return problem;
  if (k == nullptr || rebuilt.params.size() != w.params.size()) {
    return "expected the parameters " + rebuilt.describe();
  }
  for (size_t i = 0; i < k->params.size(); ++i) {
    const std::string p = param_problem(k->params[i], rebuilt.params[i].second);
    if (!p.empty()) return p;
  }
  return kind_rule(rebuilt);
}

std::string wrapper_list_problem(const WrapperList& wrappers, const std::string& path) {
  if (wrappers.size() > kMaxWrappers) {
    return (path.empty() ? "" : path + ": ") + "at most " + std::to_string(kMaxWrappers) + " wrappers, got " +
           std::to_string(wrappers.size());
  }
  for (size_t i = 0; i < wrappers.size(); ++i) {
    const std::string problem = wrapper_problem(wrappers[i]);
    const std::string place = path.empty() ? "wrapper " + std::to_string(i + 1) : path + "[" + std::to_string(i + 1) + "]";
    if (!problem.empty()) return place + " (" + wrappers[i].kind + "): " + problem;
  }
  return "";
}

std::string wrapper_list_text(const WrapperList& wrappers) {
  std::string out;
  for (size_t i = 0; i < wrappers.size(); ++i) {
    out += (i ? ";" : "") + wrappers[i].kind;
    for (const auto& [name, value] : wrappers[i].params) out += " " + name + "=" + base::number_text(value);
  }
  return out;
}

WrapperList parse_wrapper_list(const std::string& text) {
  WrapperList list;
  if (text.empty()) return list;
  if (text.size() > kMaxTextChars) {
    bad_text("longer than " + std::to_string(kMaxTextChars) + " characters (" + std::to_string(text.size()) + ")");
  }
  const std::vector<std::string> items = split(text, ';');
  if (items.size() > kMaxWrappers) {
    bad_text("more than " + std::to_string(kMaxWrappers) + " wrappers (" + std::to_string(items.size()) + ")");
  }
  for (size_t i = 0; i < items.size(); ++i) {
    const std::string where = "wrapper " + std::to_string(i + 1);
    const std::vector<std::string> words = split(items[i], ' ');
    std::vector<std::pair<std::string, double>> given;
    for (size_t w = 1; w < words.size(); ++w) {
      const size_t eq = words[w].find('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == words[w].size()) {
        bad_text(where + ": expected name=number, got " + base::lua_quote(words[w]));
      }
      const std::string number = words[w].substr(eq + 1);
      char* end = nullptr;
      errno = 0;
      const double v = std::strtod(number.c_str(), &end);
      if (end != number.c_str() + number.size() || errno == ERANGE || !std::isfinite(v)) {
        bad_text(where + ": expected a finite number, got " + base::lua_quote(number));
      }
      given.emplace_back(words[w].substr(0, eq), v);
    }
    WrapperSpec spec;
    std::string problem = make_wrapper(words[0], given, &spec);
    if (problem.empty()) problem = wrapper_problem(spec);
    if (!problem.empty()) bad_text(where + ": " + problem);
    list.push_back(std::move(spec));
  }
  return list;
}

}  // namespace moonseed::envs
