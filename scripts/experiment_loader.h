// Loads an experiment script into an engine::ExperimentConfig, validating every
// field against the schema (config_schema.h) before anything starts.
//
// The script is a Lua file that returns a table, plain or built with
// `local ms = require "moonseed"; return ms.experiment { ... }`. It runs in a
// fresh sandboxed LuaState (lua_state.h) whose `require` searches the script's
// directory, ./recipes, $MOONSEED_PATH, then the engine's Lua library; the
// moonseed API (lua_api.h) is open.
//
// Resolution: defaults (engine/config.h) <- the script's table <- overrides
// ("optimizer.lr=3e-4", typed by the schema; "env.options.NAME=VALUE" sets one
// env option). Then cross-field rules: the env id exists and accepts its
// options; groups_per_actor <= envs_per_actor.
//
// Failures: a script that does not load or raises an error -> ScriptError
// (Lua's file:line and a traceback). Any invalid field -> ConfigError listing
// every problem found, each naming file:line and the field: unknown keys (with
// "did you mean"), wrong types (expected type and the value got), values out
// of range (the range). A misspelled key is always an error, never a silent
// default. Lines come from source_locator.h's heuristic; the source of an
// override is "command line".
//
// Thread-safety: each call uses its own Lua state; calls may run concurrently.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "engine/config.h"

namespace moonseed::scripts {

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
  explicit ConfigError(std::vector<ConfigIssue> issues);
  // Sorted by file and line.
  const std::vector<ConfigIssue>& issues() const { return issues_; }

 private:
  std::vector<ConfigIssue> issues_;
};

engine::ExperimentConfig load_experiment(const std::string& path,
                                         const std::vector<std::string>& overrides = {});

// The resolved config as a plain Lua script listing every field, which
// load_experiment reads back to an equal config (the run directory's config.lua).
std::string to_lua(const engine::ExperimentConfig& config);

}  // namespace moonseed::scripts
