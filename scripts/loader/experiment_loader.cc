#include "scripts/loader/experiment_loader.h"

#include <algorithm>
#include <filesystem>

#include "base/text.h"
#include "engine/config/schema.h"
#include "engine/config/values.h"
#include "scripts/loader/assigned_fields.h"
#include "scripts/loader/config_overrides.h"
#include "scripts/loader/config_reader.h"
#include "scripts/loader/cross_field_rules.h"
#include "scripts/api/lua_api.h"
#include "scripts/state/lua_state.h"
#include "scripts/loader/recipes.h"

namespace moonseed::scripts {
namespace {

// Runs the script in a fresh sandboxed state and leaves its table, the only
// value kept, on top of the stack.
void run_script(LuaState& lua, const std::string& path) {
  lua.set_search_path(default_search_path(path));
  lua_State* L = lua.get();
  open_moonseed_api(L);
  const int results = lua.run_file(path);
  if (results < 1 || !lua_istable(L, -results)) {
    throw ConfigError({ConfigIssue{path, 0, "(experiment)",
                                   "the script must return a table of config fields, got " +
                                       (results < 1 ? std::string("nothing") : describe_value(L, -results))}});
  }
  lua_settop(L, lua_gettop(L) - results + 1);
}

// The defaults with every value set over them, each checked against its
// field's range and rule; a value out of range is an issue at its place.
engine::ExperimentConfig resolve(const AssignedFields& values, std::vector<ConfigIssue>* issues) {
  engine::ExperimentConfig config;
  for (const auto& [field_path, a] : values) {
    const engine::FieldSchema& field = *engine::find_field(field_path);
    const std::string problem = engine::check_value(field, a.value);
    if (!problem.empty()) {
      issues->push_back(ConfigIssue{a.file, a.line, field_path, problem});
      continue;
    }
    field.set(config, a.value);
    if (a.schedule) config.schedules.push_back(engine::ScheduledField{field_path, *a.schedule});  // sorted: map order
  }
  return config;
}

// env.model, env.plugin (and env.python_path's entries) relative to the script's directory, so that the learner and its actors (started
// anywhere) read the file the script names.
std::string resolve_against_script(const std::string& script, const std::string& file) {
  if (file.empty() || std::filesystem::path(file).is_absolute()) return file;
  const std::filesystem::path dir = std::filesystem::absolute(script).parent_path();
  return (dir / file).lexically_normal().string();
}

// env.python's module search path: the script's directory, then env.python_path's entries (':'-separated)
// resolved against it; "" when the env is not a Python one (python_path alone is refused later).
std::string python_search_path(const engine::EnvConfig& env, const std::string& script) {
  if (env.python.empty()) return env.python_path;
  std::vector<std::string> dirs = {std::filesystem::absolute(script).parent_path().lexically_normal().string()};
  size_t start = 0;
  while (start <= env.python_path.size()) {
    size_t end = env.python_path.find(':', start);
    if (end == std::string::npos) end = env.python_path.size();
    const std::string entry = resolve_against_script(script, env.python_path.substr(start, end - start));
    if (!entry.empty() && std::find(dirs.begin(), dirs.end(), entry) == dirs.end()) dirs.push_back(entry);
    start = end + 1;
  }
  return base::join(dirs, ":");
}

}  // namespace

LoadedExperiment load_experiment_sources(const std::string& path, const std::vector<std::string>& overrides) {
  LuaState lua(Sandbox::kOn, script_limits());
  run_script(lua, path);

  std::vector<ConfigIssue> issues;
  AssignedFields values;
  ScriptReader reader(lua.get(), &issues, &values);
  // Recipes, then the script's table: deepest base first, so each child's values replace its base's.
  const std::vector<RecipeLayer> layers = extends_chain(lua, reader, path, &issues);
  for (auto layer = layers.rbegin(); layer != layers.rend(); ++layer) read_layer(reader, *layer, &values);
  // An override may be a Lua expression, evaluated in this state under the script's limits.
  for (const std::string& o : overrides) apply_override(o, &values, &issues, &reader);

  engine::ExperimentConfig config = resolve(values, &issues);
  config.env.model = resolve_against_script(path, config.env.model);
  config.env.plugin = resolve_against_script(path, config.env.plugin);
  config.env.python_path = python_search_path(config.env, path);
  if (reader.reward_shaping()) config.reward_shaping = *reader.reward_shaping();
  // Rules between fields mean something only once each field is valid.
  envs::EnvSpec spec;
  if (issues.empty()) check_cross_field(config, path, values, &issues, &spec);
  if (!issues.empty()) throw ConfigError(std::move(issues));
  return LoadedExperiment{std::move(config), sources_of(lua), std::move(spec)};
}

engine::ExperimentConfig load_experiment(const std::string& path, const std::vector<std::string>& overrides) {
  return load_experiment_sources(path, overrides).config;
}

namespace {
// core.load_experiment (scripts/api/lua_api.h) loads with this loader.
[[maybe_unused]] const bool kLoaderSet = (set_experiment_loader(&load_experiment), true);
}  // namespace

}  // namespace moonseed::scripts
