#include "engine/config/schema_rules.h"

#include <cctype>
#include <cstdint>
#include <vector>

namespace moonseed::engine {

// The run directory is named after the experiment.
std::string directory_name_rule(const FieldValue& v) {
  const std::string& s = std::get<std::string>(v);
  bool ok = !s.empty() && s != "." && s != "..";
  for (char c : s) {
    ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.');
  }
  return ok ? "" : "expected letters, digits, '_', '-' or '.' (it names the run directory)";
}

std::string layer_count_rule(const FieldValue& v) {
  const size_t n = std::get<std::vector<int64_t>>(v).size();
  return n >= 1 && n <= 16 ? "" : "expected 1 to 16 hidden layer sizes";
}

std::string non_empty_rule(const FieldValue& v) {
  return std::get<std::string>(v).empty() ? "expected a non-empty string" : "";
}

// "" or MODULE:FUNCTION with Python's dotted names (what `python3 -m moonseed.actor --env` takes).
std::string python_factory_rule(const FieldValue& v) {
  const std::string& s = std::get<std::string>(v);
  if (s.empty()) return "";
  const size_t colon = s.find(':');
  auto dotted_name = [](const std::string& n) {
    if (n.empty() || n.front() == '.' || n.back() == '.' || n.find("..") != std::string::npos) return false;
    for (size_t i = 0; i < n.size(); ++i) {
      const char c = n[i];
      const bool word_start = i == 0 || n[i - 1] == '.';
      if (c == '.') continue;
      if (!(std::isalpha(static_cast<unsigned char>(c)) || c == '_' ||
            (!word_start && std::isdigit(static_cast<unsigned char>(c))))) {
        return false;
      }
    }
    return true;
  };
  if (colon == std::string::npos || !dotted_name(s.substr(0, colon)) || !dotted_name(s.substr(colon + 1))) {
    return "expected MODULE:FUNCTION with Python names, e.g. \"myenvs:make_env\" or \"pkg.mod:make_env\"";
  }
  return "";
}

// topology.rendezvous: empty, or tcp:HOST:PORT with a port rank 0 can serve on.
std::string rendezvous_rule(const FieldValue& v) {
  const std::string& s = std::get<std::string>(v);
  if (s.empty()) return "";
  if (s.rfind("file:", 0) == 0 && s.size() > 5) return "";  // the ranks a run starts on its own host
  const size_t colon = s.rfind(':');
  const std::string expected = "expected \"\" or tcp:HOST:PORT, e.g. \"tcp:node001:29500\"";
  if (s.rfind("tcp:", 0) != 0 || colon <= 4 || colon + 1 >= s.size()) return expected;
  int port = 0;
  for (size_t i = colon + 1; i < s.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(s[i])) || port > 65535) return expected;
    port = port * 10 + (s[i] - '0');
  }
  if (port < 1 || port > 65535) return "the port must be in 1..65535 (rank 0 serves the store on it)";
  return "";
}

}  // namespace moonseed::engine
