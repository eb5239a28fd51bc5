// How loading an experiment fails on its config: every problem found, each
// with the file:line and the field at fault, in one exception
// (experiment_loader.h). Problems are collected, never thrown one by one, so
// a user fixes a script in one pass.
//
// Plain values; thread-safe.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace moonseed::scripts {

// The file of a value given by an override ("optimizer.lr=3e-4").
inline constexpr const char* kCommandLine = "command line";

struct ConfigIssue {
  std::string file;  // script path, or "command line"
  int line = 0;      // 0 when unknown or not in a file
  std::string field;    // "optimizer.lr"
  std::string message;  // "expected a number in (0, 1], got 2"
  // "file:line: field: message"
  std::string str() const;
};

class ConfigError : public std::runtime_error {
 public:
  // what() is every issue's str(), one a line, in the order of issues().
  explicit ConfigError(std::vector<ConfigIssue> issues);
  // Sorted by file and line, command-line issues last.
  const std::vector<ConfigIssue>& issues() const { return issues_; }

 private:
  std::vector<ConfigIssue> issues_;
};

}  // namespace moonseed::scripts
