// Loads an experiment script into an engine::ExperimentConfig, validating every
// field against the schema (engine/config/schema.h) before anything starts.
//
// The script is a Lua file that returns a table, plain or built with
// `local ms = require "moonseed"; return ms.experiment { ... }`. It runs in a
// fresh sandboxed LuaState (lua_state.h) whose `require` searches the script's
// directory, ./recipes, $MOONSEED_PATH, then the engine's Lua library; the
// moonseed API (lua_api.h) is open.
//
// Resolution: defaults (engine/config/experiment_config.h) <- the recipes the script extends,
// deepest base first <- the script's table <- overrides ("optimizer.lr=3e-4",
// typed by the schema; "env.options.NAME=VALUE" sets one env option). Then
// cross-field rules: those of engine/config/config_problems.h
// (groups_per_actor <= envs_per_actor, evaluation envs, R2D2 sequences, ...),
// then the env id exists and accepts its options and the model fits the env.
// A relative env.model (a file the env loads) is made absolute against the script's
// directory, wherever it was set (script, recipe or override).
// One file per step: config_reader.h, recipes.h, config_overrides.h,
// cross_field_rules.h; config_error.h, sources_manifest.h and
// config_lua_writer.h hold the types and writers declared with them here.
//
// Recipes (docs/recipes.md): a top-level `extends = "team.recipe"` names a
// module, found by `require` on the search path above; it returns an
// experiment table, which may extend another. Merge is deep, the child wins:
// each field the child sets replaces the base's, a section set in part keeps
// the base's other fields, lists (model.hidden) are replaced whole, number maps
// (env.options) merge by key. Every value keeps the file:line where it was
// written, in the script or in the recipe. `extends` that is not a string, a
// recipe that cannot be found (the message lists the files tried), a recipe
// that returns no table and a cycle (the chain is named) are ConfigErrors at
// the `extends` line; an error raised while a recipe runs is a ScriptError.
//
// Provenance: load_experiment_sources also returns every Lua file the config
// came from (the script, recipes, modules it required, the engine's embedded
// library files), with the exact bytes and their SHA-256, which a run
// directory keeps so the run can be reproduced from it alone.
//
// Schedules (scripts/api/lua_schedules.h, docs/lua-api.md "Schedules"): a hot
// number field may take a schedule table or a Lua function of progress
// (sampled here, at load time); the field holds the value at x = 0 and
// config.schedules records the schedule. An override replaces the field's
// schedule: with a number, or with a schedule written as the Lua expression a
// script would hold ("optimizer.lr=ms.linear(1e-3, 1e-4, 1e6)", config_overrides.h).
//
// Reward shaping (scripts/api/shaping_function.h, docs/reward-shaping.md): a
// top-level `reward_shaping` function is kept as its exact text, checked for
// upvalues and compiled as the actors will; `false` removes a recipe's. It is
// not a schema field and cannot be overridden on the command line.
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

#include <string>
#include <vector>

#include "engine/config/experiment_config.h"
#include "envs/spec.h"
#include "scripts/api/config_error.h"        // ConfigIssue, ConfigError
#include "scripts/api/config_lua_writer.h"   // to_lua
#include "scripts/loader/sources_manifest.h"    // ScriptSource, sources_manifest

namespace moonseed::scripts {

struct LoadedExperiment {
  engine::ExperimentConfig config;
  std::vector<ScriptSource> sources;  // the script first, then every Lua file it loaded
                                      // (require, extends), each once, in load order
  // The env's spec as the learner's model sees it (engine::model_env_spec): described while
  // loading (a plugin or Python env by a child process), wrapped by env.wrappers. Reuse it
  // rather than describing the env again.
  envs::EnvSpec spec;
};

LoadedExperiment load_experiment_sources(const std::string& path,
                                         const std::vector<std::string>& overrides = {});

// load_experiment_sources(path, overrides).config.
engine::ExperimentConfig load_experiment(const std::string& path,
                                         const std::vector<std::string>& overrides = {});

}  // namespace moonseed::scripts
