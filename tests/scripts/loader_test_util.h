// Helpers shared by the loader tests: the issues a script produces, and what
// the system's sha256sum says about a file.
#pragma once

#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "scripts/loader/experiment_loader.h"

namespace moonseed::scripts::testing {

// The issues load_experiment reports for a script (empty when it loads).
inline std::vector<ConfigIssue> issues_of(const std::string& path,
                                          const std::vector<std::string>& overrides = {}) {
  try {
    load_experiment(path, overrides);
  } catch (const ConfigError& e) {
    return e.issues();
  }
  return {};
}

// What the system's sha256sum prints for a file: its first 64 characters.
inline std::string sha256sum_of(const std::string& path) {
  const std::string command = "sha256sum '" + path + "'";
  std::FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) throw std::runtime_error("popen failed: " + command);
  std::string out;
  char buffer[256];
  size_t n = 0;
  while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) out.append(buffer, n);
  const int status = pclose(pipe);
  if (status != 0 || out.size() < 64) throw std::runtime_error(command + " failed: " + out);
  return out.substr(0, 64);
}

}  // namespace moonseed::scripts::testing
