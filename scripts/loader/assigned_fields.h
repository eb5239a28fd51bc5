// The values a script, its recipes and the command line give to config
// fields, each with where it was given: what the loader's steps pass along
// (config_reader.h reads them, recipes.h layers them, config_overrides.h
// replaces them, cross_field_rules.h blames them) before any reaches an
// ExperimentConfig.
//
// Plain values; thread-safe.
#pragma once

#include <algorithm>
#include <map>
#include <optional>
#include <string>

#include "engine/config/schema.h"

namespace moonseed::scripts {

// A value given to a field, and where it was given.
struct Assigned {
  engine::FieldValue value;
  std::string file;  // script or recipe path, or kCommandLine (config_error.h)
  int line = 0;
  std::optional<engine::Schedule> schedule = std::nullopt;  // set when the value is a schedule's value at x = 0
};

// By field path ("optimizer.lr"); a field no one set is absent.
using AssignedFields = std::map<std::string, Assigned>;

// nullptr when no one set `path`.
inline const Assigned* find_assigned(const AssignedFields& fields, const std::string& path) {
  auto it = fields.find(path);
  return it == fields.end() ? nullptr : &it->second;
}

// `over` merged into `under` by key, `over`'s numbers winning, sorted by
// name: how a number map (env.options) layers over a recipe's, and how
// "env.options.NAME=VALUE" sets one entry.
inline engine::NumberMap merged_by_key(engine::NumberMap under, const engine::NumberMap& over) {
  for (const auto& entry : over) {
    auto same = std::find_if(under.begin(), under.end(), [&](const auto& e) { return e.first == entry.first; });
    if (same != under.end()) {
      same->second = entry.second;
    } else {
      under.push_back(entry);
    }
  }
  std::sort(under.begin(), under.end());
  return under;
}

}  // namespace moonseed::scripts
