#include "scripts/api/config_error.h"

#include <algorithm>
#include <tuple>

namespace moonseed::scripts {
namespace {

std::vector<ConfigIssue> sorted(std::vector<ConfigIssue> issues) {
  std::stable_sort(issues.begin(), issues.end(), [](const ConfigIssue& a, const ConfigIssue& b) {
    return std::make_tuple(a.file == kCommandLine, a.file, a.line, a.field) <
           std::make_tuple(b.file == kCommandLine, b.file, b.line, b.field);
  });
  return issues;
}

std::string joined(const std::vector<ConfigIssue>& issues) {
  std::string text;
  for (const ConfigIssue& i : issues) text += (text.empty() ? "" : "\n") + i.str();
  return text;
}

}  // namespace

std::string ConfigIssue::str() const {
  std::string where = file;
  if (line > 0) where += ":" + std::to_string(line);
  return where + ": " + field + ": " + message;
}

ConfigError::ConfigError(std::vector<ConfigIssue> issues)
    : std::runtime_error(joined(sorted(issues))), issues_(sorted(std::move(issues))) {}

}  // namespace moonseed::scripts
