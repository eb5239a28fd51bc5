// What a hot reload would change: the fields whose values differ between the
// running config and a freshly loaded one, each with its reload class, and
// whether the reload may be applied at all (no restart-only field changed).
//
// Pure functions of two configs; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "engine/config/experiment_config.h"
#include "engine/config/schema.h"

namespace moonseed::engine {

struct FieldChange {
  std::string path;     // "optimizer.lr"
  ReloadClass reload = ReloadClass::kRestart;
  std::string before;   // Lua literals: "0.001", "\"adam\"", "{64, 64}"
  std::string after;
  std::string before_json;  // the same values as JSON: 0.001, "adam", [64, 64]
  std::string after_json;
};

struct ConfigDiff {
  std::vector<FieldChange> changes;  // in schema order
  bool empty() const { return changes.empty(); }
  // Paths of the restart-only fields among the changes: a reload that has any is refused.
  std::vector<std::string> refused() const;
  // "optimizer.lr 0.001 -> 0.0005, vtrace.entropy_cost 0.01 -> 0.02"
  std::string summary() const;
  // {"optimizer.lr": {"from": 0.001, "to": 0.0005}, ...}
  std::string to_json() const;
};

ConfigDiff diff_configs(const ExperimentConfig& running, const ExperimentConfig& loaded);

}  // namespace moonseed::engine
