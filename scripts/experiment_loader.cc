#include "scripts/experiment_loader.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <optional>

#include "base/text.h"
#include "base/constants.h"
#include "envs/env.h"
#include "scripts/lua_layers.h"
#include "scripts/lua_schedules.h"
#include "engine/config/schedule_text.h"
#include "engine/config/schema.h"
#include "engine/config/values.h"
#include "scripts/lua_api.h"
#include "scripts/lua_arrays.h"
#include "scripts/lua_state.h"
#include "scripts/shaping_function.h"
#include "scripts/source_locator.h"

namespace moonseed::scripts {
namespace {

// Where a table was written: its file, its constructor when known, and the
// line to blame when a key cannot be found in the text.
struct Place {
  std::string file;
  std::optional<SourceLocator::Anchor> anchor;
  int line = 0;
};

// A value given to a field, and where it was given.
struct Assigned {
  engine::FieldValue value;
  std::string file;
  int line = 0;
  std::optional<engine::Schedule> schedule = std::nullopt;  // set when the value is a schedule's value at x = 0
};

int absolute(lua_State* L, int index) {
  return index < 0 && index > LUA_REGISTRYINDEX ? lua_gettop(L) + index + 1 : index;
}

// "string \"fast\"", "number 2.5", "boolean true", "table".
std::string describe(lua_State* L, int index) {
  const int type = lua_type(L, index);
  std::string text = lua_typename(L, type);
  if (type == LUA_TNUMBER) {
    text += " " + engine::format_number(lua_tonumber(L, index));
  } else if (type == LUA_TBOOLEAN) {
    text += lua_toboolean(L, index) ? " true" : " false";
  } else if (type == LUA_TSTRING) {
    size_t size = 0;
    const char* s = lua_tolstring(L, index, &size);
    const std::string shown(s, std::min<size_t>(size, 60));
    text += " " + base::lua_quote(shown) + (size > 60 ? "..." : "");
  }
  return text;
}

std::string join(const std::string& section, const std::string& key) {
  return section.empty() ? key : section + "." + key;
}

std::string listing(const std::vector<std::string>& names) {
  std::string text;
  for (const std::string& n : names) text += (text.empty() ? "" : ", ") + n;
  return text;
}

// Reads the script's table into field values, recording every problem.
class ScriptReader {
 public:
  ScriptReader(lua_State* L, std::vector<ConfigIssue>* issues, std::map<std::string, Assigned>* values)
      : L_(L), issues_(issues), values_(values) {}

  Place root_place(int index, const std::string& script) {
    if (std::optional<Place> helper = helper_place(index)) return *helper;
    Place place{script, locator_.returned_constructor(script), 0};
    if (place.anchor) place.line = locator_.line_of(*place.anchor);
    return place;
  }

  // Line where `key` of the table at `place` was written; the table's line
  // when the text does not show it.
  int line_of_key(const Place& place, const std::string& key) {
    if (!place.anchor) return place.line;
    const std::optional<SourceLocator::KeyPlace> key_place = locator_.find_key(*place.anchor, key);
    return key_place ? key_place->line : place.line;
  }

  void read_section(int index, const std::string& section, const Place& place) {
    index = absolute(L_, index);
    lua_pushnil(L_);
    while (lua_next(L_, index) != 0) {
      read_entry(section, place);
      lua_pop(L_, 1);
    }
  }

 private:
  // Key at -2, value at -1.
  void read_entry(const std::string& section, const Place& place) {
    if (lua_type(L_, -2) != LUA_TSTRING) {
      issue(place.file, place.line, section.empty() ? "(experiment)" : section,
            "unexpected entry with key " + describe(L_, -2) + "; config tables take named fields");
      return;
    }
    const std::string key = lua_tostring(L_, -2);
    const std::string path = join(section, key);
    std::optional<SourceLocator::KeyPlace> key_place;
    if (place.anchor) key_place = locator_.find_key(*place.anchor, key);
    const int line = key_place ? key_place->line : place.line;

    if (path == engine::kRewardShapingPath) {
      read_reward_shaping(place.file, line);
    } else if (const engine::FieldSchema* field = engine::find_field(path)) {
      Place value_place{place.file, key_place ? key_place->value : std::nullopt, line};
      read_field(*field, value_place);
    } else if (engine::is_section(path)) {
      if (!lua_istable(L_, -1)) {
        issue(place.file, line, path,
              "expected a table (section with fields " + listing(engine::names_in(path)) + "), got " +
                  describe(L_, -1));
        return;
      }
      Place child{place.file, std::nullopt, line};
      if (key_place && key_place->value) {
        child.anchor = key_place->value;
      } else if (std::optional<Place> helper = helper_place(-1)) {
        child = *helper;
      }
      read_section(-1, path, child);
    } else {
      const std::string suggestion = engine::did_you_mean(path);
      issue(place.file, line, path,
            suggestion.empty()
                ? "unknown field; " + (section.empty() ? std::string("the experiment") : section) +
                      " has: " + listing(engine::names_in(section))
                : "unknown field; did you mean '" + suggestion + "'?");
    }
  }

  // Value at -1.
  void read_field(const engine::FieldSchema& field, const Place& place) {
    std::optional<engine::FieldValue> value;
    const int type = lua_type(L_, -1);
    if (is_schedule_value(L_, -1) ||
        (field.type == engine::FieldType::kNumber && (type == LUA_TTABLE || type == LUA_TFUNCTION))) {
      read_scheduled_field(field, place);
      return;
    }
    switch (field.type) {
      case engine::FieldType::kNumber:
        if (type == LUA_TNUMBER) value = static_cast<double>(lua_tonumber(L_, -1));
        break;
      case engine::FieldType::kInteger:
        if (type == LUA_TNUMBER) {
          value = integer_at(-1, field, field.path, place);
          if (!value) return;
        }
        break;
      case engine::FieldType::kString:
        if (type == LUA_TSTRING) value = std::string(lua_tostring(L_, -1));
        break;
      case engine::FieldType::kBool:
        if (type == LUA_TBOOLEAN) value = static_cast<bool>(lua_toboolean(L_, -1));
        break;
      case engine::FieldType::kIntegerList:
        if (type == LUA_TTABLE) {
          value = integer_list(field, place);
          if (!value) return;
        }
        break;
      case engine::FieldType::kNumberMap:
        if (type == LUA_TTABLE) {
          value = number_map(field, place);
          if (!value) return;
        }
        break;
      case engine::FieldType::kLayerList:
        if (type == LUA_TTABLE) {
          LayerListRead read = read_layer_list(L_, -1, field.path);
          if (!read.layers) {
            const bool own_place = !read.file.empty();
            return issue(own_place ? read.file : place.file, own_place ? read.line : place.line, read.field,
                         read.problem);
          }
          value = std::move(*read.layers);
        }
        break;
    }
    if (!value) {
      issue(place.file, place.line, field.path,
            std::string("expected ") + (field.type == engine::FieldType::kInteger ? "an " : "a ") +
                engine::type_name(field.type) + ", got " + describe(L_, -1));
      return;
    }
    (*values_)[field.path] = Assigned{std::move(*value), place.file, place.line};
  }

  // Value at -1: a function, or false for none (scripts/shaping_function.h).
  void read_reward_shaping(const std::string& file, int line) {
    if (lua_type(L_, -1) == LUA_TBOOLEAN && !lua_toboolean(L_, -1)) {
      reward_shaping_ = engine::RewardShapingConfig{};
      return;
    }
    if (lua_type(L_, -1) != LUA_TFUNCTION) {
      return issue(file, line, engine::kRewardShapingPath, "expected a function (or false for none), got " + describe(L_, -1));
    }
    ShapingRead read = read_shaping_function(L_, -1);
    if (!read.problem.empty()) {
      const bool own_place = !read.file.empty();
      return issue(own_place ? read.file : file, own_place ? read.line : line, engine::kRewardShapingPath, read.problem);
    }
    reward_shaping_ = std::move(read.function);
  }

  // Value at -1: a schedule (config_schedules.h) given to `field`.
  void read_scheduled_field(const engine::FieldSchema& field, Place place) {
    const std::string refusal = engine::schedule_refusal(field);
    if (!refusal.empty()) return issue(place.file, place.line, field.path, refusal + ", got " + describe(L_, -1));
    // A schedule built away from its key (a variable, a recipe): its helper knows the line.
    if (!place.anchor) {
      if (std::optional<Place> helper = helper_place(-1)) place = *helper;
    }
    ScheduleRead read = read_schedule(L_, -1, field);
    if (!read.schedule) {
      const bool own_place = !read.file.empty();
      return issue(own_place ? read.file : place.file, own_place ? read.line : place.line, field.path, read.problem);
    }
    const double start = read.schedule->at(0);
    (*values_)[field.path] = Assigned{start, place.file, place.line, std::move(read.schedule)};
  }

  // A number at `index` that must be an integer; nullopt after reporting.
  std::optional<engine::FieldValue> integer_at(int index, const engine::FieldSchema& field, const std::string& name,
                                       const Place& place) {
    const double d = lua_tonumber(L_, index);
    if (d != std::floor(d)) {
      issue(place.file, place.line, name, "expected an integer, got " + describe(L_, index));
      return std::nullopt;
    }
    if (!(std::fabs(d) <= base::kMaxExactInteger)) {
      issue(place.file, place.line, name,
            "expected an integer in " + engine::range_text(field) + ", got " + engine::format_number(d));
      return std::nullopt;
    }
    return engine::FieldValue(static_cast<int64_t>(d));
  }

  std::optional<engine::FieldValue> integer_list(const engine::FieldSchema& field, const Place& place) {
    const int table = lua_gettop(L_);
    const size_t n = lua_objlen(L_, table);
    if (!is_sequence(L_, table)) {
      issue(place.file, place.line, field.path,
            "expected a list of integers like {64, 64}, got a table with named or missing entries");
      return std::nullopt;
    }
    std::vector<int64_t> list;
    for (size_t k = 1; k <= n; ++k) {
      lua_rawgeti(L_, table, static_cast<int>(k));
      const std::string name = field.path + "[" + std::to_string(k) + "]";
      std::optional<engine::FieldValue> element;
      if (lua_type(L_, -1) == LUA_TNUMBER) {
        element = integer_at(-1, field, name, place);
      } else {
        issue(place.file, place.line, name, "expected an integer, got " + describe(L_, -1));
      }
      lua_pop(L_, 1);
      if (!element) return std::nullopt;
      list.push_back(std::get<int64_t>(*element));
    }
    return engine::FieldValue(std::move(list));
  }

  std::optional<engine::FieldValue> number_map(const engine::FieldSchema& field, const Place& place) {
    const int table = lua_gettop(L_);
    engine::NumberMap map;
    bool ok = true;
    lua_pushnil(L_);
    while (lua_next(L_, table) != 0) {
      if (lua_type(L_, -2) != LUA_TSTRING) {
        issue(place.file, place.line, field.path,
              "expected a map of numbers like {max_episode_steps = 200}, got key " + describe(L_, -2));
        ok = false;
      } else {
        const std::string key = lua_tostring(L_, -2);
        std::optional<SourceLocator::KeyPlace> key_place;
        if (place.anchor) key_place = locator_.find_key(*place.anchor, key);
        const int line = key_place ? key_place->line : place.line;
        if (lua_type(L_, -1) == LUA_TNUMBER) {
          map.emplace_back(key, lua_tonumber(L_, -1));
        } else {
          issue(place.file, line, field.path + "." + key, "expected a number, got " + describe(L_, -1));
          ok = false;
        }
      }
      lua_pop(L_, 1);
    }
    if (!ok) return std::nullopt;
    std::sort(map.begin(), map.end());
    return engine::FieldValue(std::move(map));
  }

  // The place recorded by a DSL helper (ms.origin), if the table was built by one.
  std::optional<Place> helper_place(int index) {
    const std::optional<DslOrigin> origin = dsl_origin(L_, index);
    if (!origin) return std::nullopt;
    return Place{origin->file, locator_.constructor_at_line(origin->file, origin->line), origin->line};
  }

  void issue(const std::string& file, int line, const std::string& field, const std::string& message) {
    issues_->push_back(ConfigIssue{file, line, field, message});
  }

  lua_State* L_;
  SourceLocator locator_;
  std::vector<ConfigIssue>* issues_;
  std::map<std::string, Assigned>* values_;

 public:
  // The last layer's reward_shaping, when a layer set it.
  const std::optional<engine::RewardShapingConfig>& reward_shaping() const { return reward_shaping_; }

 private:
  std::optional<engine::RewardShapingConfig> reward_shaping_;
};

void apply_override(const std::string& text, std::map<std::string, Assigned>* values,
                    std::vector<ConfigIssue>* issues) {
  const size_t eq = text.find('=');
  const std::string path = text.substr(0, std::min(eq, text.size()));
  auto fail = [&](const std::string& field, const std::string& message) {
    issues->push_back(ConfigIssue{kCommandLine, 0, field, message + " (in override '" + text + "')"});
  };
  if (eq == std::string::npos || path.empty()) return fail(text, "expected FIELD=VALUE");
  if (path == engine::kRewardShapingPath) return fail(path, "is a Lua function: set it in the script");
  const std::string value_text = text.substr(eq + 1);
  try {
    if (const engine::FieldSchema* field = engine::find_field(path)) {
      (*values)[path] = Assigned{engine::parse_value(*field, value_text), kCommandLine, 0};
      return;
    }
    // "env.options.NAME=VALUE": one entry of a map field, merged into its value.
    const size_t dot = path.rfind('.');
    const engine::FieldSchema* map = dot == std::string::npos ? nullptr : engine::find_field(path.substr(0, dot));
    if (map != nullptr && map->type == engine::FieldType::kNumberMap) {
      // The map's own parser checks the name and the number.
      const engine::FieldValue entry = engine::parse_value(*map, path.substr(dot + 1) + "=" + value_text);
      if (std::get<engine::NumberMap>(entry).size() != 1) return fail(path, "expected one number, got '" + value_text + "'");
      auto it = values->find(map->path);
      engine::NumberMap merged = it != values->end() ? std::get<engine::NumberMap>(it->second.value)
                                             : std::get<engine::NumberMap>(map->get(engine::ExperimentConfig{}));
      const std::pair<std::string, double>& set = std::get<engine::NumberMap>(entry).front();
      merged.erase(std::remove_if(merged.begin(), merged.end(),
                                  [&](const auto& e) { return e.first == set.first; }),
                   merged.end());
      merged.push_back(set);
      std::sort(merged.begin(), merged.end());
      (*values)[map->path] = Assigned{std::move(merged), kCommandLine, 0};
      return;
    }
  } catch (const std::invalid_argument& e) {
    return fail(path, e.what());
  }
  if (engine::is_section(path)) return fail(path, "is a section; set one of its fields: " + listing(engine::names_in(path)));
  const std::string suggestion = engine::did_you_mean(path);
  fail(path, suggestion.empty() ? "unknown field" : "unknown field; did you mean '" + suggestion + "'?");
}

}  // namespace

namespace {

const Assigned* assigned(const std::map<std::string, Assigned>& values, const std::string& path) {
  auto it = values.find(path);
  return it == values.end() ? nullptr : &it->second;
}

// Rules between fields, checked once every field is valid on its own. A
// problem is reported where the first of `paths` that was set was set.
void check_cross_field(const engine::ExperimentConfig& config, const std::string& script,
                       const std::map<std::string, Assigned>& values, std::vector<ConfigIssue>* issues) {
  auto report = [&](std::initializer_list<const char*> paths, const std::string& message) {
    for (const char* path : paths) {
      if (const Assigned* a = assigned(values, path)) {
        issues->push_back(ConfigIssue{a->file, a->line, path, message});
        return;
      }
    }
    issues->push_back(ConfigIssue{script, 0, *paths.begin(), message});
  };
  if (config.topology.groups_per_actor > config.topology.envs_per_actor) {
    report({"topology.groups_per_actor", "topology.envs_per_actor"},
           "groups_per_actor (" + std::to_string(config.topology.groups_per_actor) +
               ") exceeds envs_per_actor (" + std::to_string(config.topology.envs_per_actor) +
               "): every group needs at least one env");
  }
  for (const engine::ScheduledField& s : config.schedules) {
    if (s.schedule.axis == engine::Schedule::Axis::kProgress && config.stop.frames <= 0) {
      const Assigned* a = assigned(values, s.path);
      issues->push_back(ConfigIssue{a->file, a->line, s.path,
                                    "follows a schedule over progress (frames / stop.frames), which needs "
                                    "stop.frames > 0; stop.frames is " + std::to_string(config.stop.frames)});
    }
  }
  if (config.topology.local_actors > config.topology.actors) {
    report({"topology.local_actors", "topology.actors"},
           "local_actors (" + std::to_string(config.topology.local_actors) + ") exceeds actors (" +
               std::to_string(config.topology.actors) + ")");
  }
  const int eval_envs = config.topology.eval_envs_per_actor;
  if (eval_envs > 0 && config.algo != "r2d2") {
    report({"topology.eval_envs_per_actor"},
           "evaluation envs are an R2D2 feature (algo = \"r2d2\"); algo is " + base::lua_quote(config.algo) +
               " (evaluate a V-trace run from its console: run:evaluate(10))");
  } else if (eval_envs >= config.topology.envs_per_actor) {
    report({"topology.eval_envs_per_actor", "topology.envs_per_actor"},
           "eval_envs_per_actor (" + std::to_string(eval_envs) + ") must be below envs_per_actor (" +
               std::to_string(config.topology.envs_per_actor) + "): some envs must feed the replay");
  }
  if (config.stop.eval_return_mean != 0 && eval_envs == 0) {
    report({"stop.eval_return_mean", "topology.eval_envs_per_actor"},
           "stop.eval_return_mean needs evaluation envs: set topology.eval_envs_per_actor >= 1");
  }
  if (config.algo == "r2d2") {
    const engine::R2d2Config& r = config.r2d2;
    if (r.period > r.burn_in + r.trace) {
      report({"r2d2.period", "r2d2.trace", "r2d2.burn_in"},
             "period (" + std::to_string(r.period) + ") exceeds burn_in + trace (" +
                 std::to_string(r.burn_in + r.trace) + "): steps between sequences would never be trained on");
    }
    if (r.min_fill > r.capacity) {
      report({"r2d2.min_fill", "r2d2.capacity"},
             "min_fill (" + std::to_string(r.min_fill) + ") exceeds capacity (" + std::to_string(r.capacity) +
                 "): training would never start");
    }
    if (r.batch > r.min_fill) {
      report({"r2d2.batch", "r2d2.min_fill"},
             "batch (" + std::to_string(r.batch) + ") exceeds min_fill (" + std::to_string(r.min_fill) +
                 "): the first batch would repeat sequences; raise min_fill to at least batch");
    }
  }
  const std::vector<std::string> ids = envs::env_ids();
  if (std::find(ids.begin(), ids.end(), config.env.id) == ids.end()) {
    const std::string close = base::closest_name(config.env.id, ids);
    report({"env.id"}, "unknown environment " + base::lua_quote(config.env.id) +
                           (close.empty() ? "" : "; did you mean " + base::lua_quote(close) + "?") +
                           " (known: " + listing(ids) + ")");
    return;
  }
  std::unique_ptr<envs::Env> env;
  try {
    env = envs::make_env(config.env.id, config.env.options);
  } catch (const std::invalid_argument& e) {
    report({"env.options", "env.id"}, e.what());
    return;
  }
  const models::ModelSpec& model = config.model;
  if (model.kind == "layers" && model.layers.empty()) {
    report({"model.kind", "model.layers"},
           "model.kind is \"layers\" but model.layers is empty: declare them, e.g. "
           "model = ms.layers {ms.nn.linear(64), ms.nn.tanh()}");
  } else if (model.kind != "layers" && !model.layers.empty()) {
    report({"model.layers", "model.kind"},
           "model.layers is set but model.kind is " + base::lua_quote(model.kind) +
               ", which ignores it: set model.kind = \"layers\" (ms.layers {...} does)");
  } else {
    const std::string problem = model_problem(config, env->spec());
    if (!problem.empty()) report({"model.layers", "model.kind", "model.hidden"}, problem + " (for " + config.env.id + ")");
  }
}

}  // namespace

namespace {

// One table of an experiment's extends chain: the script's or a recipe's.
struct Layer {
  int index;    // absolute stack index of the table, without its `extends`
  Place place;  // where the table was written
};

// Pushes a shallow copy of the table at `index` without its `extends` key, so
// the reader sees config fields only. Nested sections stay the same tables
// (and keep the places their helpers recorded).
void push_without_extends(lua_State* L, int index) {
  lua_newtable(L);
  lua_pushnil(L);
  while (lua_next(L, index) != 0) {
    if (lua_type(L, -2) == LUA_TSTRING && std::strcmp(lua_tostring(L, -2), "extends") == 0) {
      lua_pop(L, 1);
      continue;
    }
    lua_pushvalue(L, -2);
    lua_insert(L, -2);
    lua_rawset(L, -4);
  }
}

// require(name), leaving the recipe's table on the stack. Returns the file it
// came from, or nullopt after reporting at file:line why it cannot be used.
// An error raised while the recipe runs is a ScriptError, as in the script.
std::optional<std::string> require_recipe(LuaState& lua, const std::string& name, const std::string& file,
                                          int line, std::vector<ConfigIssue>* issues) {
  lua_State* L = lua.get();
  lua_getglobal(L, "require");
  lua_pushlstring(L, name.data(), name.size());
  if (pcall_with_traceback(L, 1, 1) != 0) {
    const std::string message = lua_isstring(L, -1) ? lua_tostring(L, -1) : "(error object is not a string)";
    lua_pop(L, 1);
    // require's own wording (LuaJIT lib_package.c), then each loader's "no file ..." lines.
    const std::string not_found = "module '" + name + "' not found:";
    if (message.compare(0, not_found.size(), not_found) != 0) throw ScriptError(message);
    const std::string tried = message.substr(not_found.size());
    issues->push_back(ConfigIssue{file, line, "extends",
                                  "recipe " + base::lua_quote(name) + " not found; tried:" +
                                      tried.substr(0, tried.find("\nstack traceback:"))});
    return std::nullopt;
  }
  if (!lua_istable(L, -1)) {
    issues->push_back(ConfigIssue{file, line, "extends",
                                  "recipe " + base::lua_quote(name) + " must return an experiment table, got " +
                                      describe(L, -1)});
    lua_pop(L, 1);
    return std::nullopt;
  }
  const LoadedLuaFile* source = lua.module_file(name);
  return source != nullptr ? source->path : "module " + name;
}

// The script's table (on top of the stack) and the recipes it extends, child
// first, each pushed as a copy without `extends`. A problem with `extends`
// itself is reported at its line and ends the chain there.
std::vector<Layer> extends_chain(LuaState& lua, ScriptReader& reader, const std::string& script,
                                 std::vector<ConfigIssue>* issues) {
  lua_State* L = lua.get();
  std::vector<Layer> layers;
  std::vector<std::string> chain{script};
  int table = lua_gettop(L);
  std::string file = script;
  for (;;) {
    if (!lua_checkstack(L, 8)) throw std::runtime_error("extends chain too long: " + listing(chain));
    const Place place = reader.root_place(table, file);
    lua_pushliteral(L, "extends");
    lua_rawget(L, table);
    const int type = lua_type(L, -1);
    const std::string base = type == LUA_TSTRING ? lua_tostring(L, -1) : "";
    const std::string got = describe(L, -1);
    lua_pop(L, 1);
    if (type == LUA_TNIL) {
      lua_pushvalue(L, table);
      layers.push_back(Layer{lua_gettop(L), place});
      return layers;
    }
    push_without_extends(L, table);
    layers.push_back(Layer{lua_gettop(L), place});

    const int line = reader.line_of_key(place, "extends");
    if (type != LUA_TSTRING) {
      issues->push_back(ConfigIssue{
          place.file, line, "extends",
          "expected a string naming a recipe module like \"team.recipe\", got " + got});
      return layers;
    }
    if (std::find(chain.begin() + 1, chain.end(), base) != chain.end()) {
      std::string cycle;
      for (const std::string& link : chain) cycle += link + " -> ";
      issues->push_back(ConfigIssue{place.file, line, "extends", "cycle of recipes: " + cycle + base});
      return layers;
    }
    chain.push_back(base);
    const std::optional<std::string> base_file = require_recipe(lua, base, place.file, line, issues);
    if (!base_file) return layers;
    table = lua_gettop(L);
    file = *base_file;
  }
}

// Reads one layer over the values of the layers below it: a field it sets
// replaces theirs, except number maps, which merge by key (its keys win; the
// merged map is attributed to this layer).
void read_layer(ScriptReader& reader, const Layer& layer, std::map<std::string, Assigned>* values) {
  std::map<std::string, Assigned> earlier_maps;
  for (auto it = values->begin(); it != values->end();) {
    if (std::holds_alternative<engine::NumberMap>(it->second.value)) {
      earlier_maps.emplace(it->first, std::move(it->second));
      it = values->erase(it);
    } else {
      ++it;
    }
  }
  reader.read_section(layer.index, "", layer.place);
  for (auto& [field_path, earlier] : earlier_maps) {
    auto it = values->find(field_path);
    if (it == values->end()) {
      values->emplace(field_path, std::move(earlier));
      continue;
    }
    engine::NumberMap* merged = std::get_if<engine::NumberMap>(&it->second.value);
    if (merged == nullptr) continue;
    for (const auto& entry : std::get<engine::NumberMap>(earlier.value)) {
      const bool overridden = std::any_of(merged->begin(), merged->end(),
                                          [&](const auto& e) { return e.first == entry.first; });
      if (!overridden) merged->push_back(entry);
    }
    std::sort(merged->begin(), merged->end());
  }
}

}  // namespace

engine::ExperimentConfig load_experiment(const std::string& path,
                                         const std::vector<std::string>& overrides) {
  return load_experiment_sources(path, overrides).config;
}

LoadedExperiment load_experiment_sources(const std::string& path,
                                         const std::vector<std::string>& overrides) {
  LuaState lua(Sandbox::kOn);
  lua.set_search_path(default_search_path(path));
  lua_State* L = lua.get();
  open_moonseed_api(L);
  const int results = lua.run_file(path);
  if (results < 1 || !lua_istable(L, -results)) {
    throw ConfigError({ConfigIssue{path, 0, "(experiment)",
                                   "the script must return a table of config fields, got " +
                                       (results < 1 ? std::string("nothing") : describe(L, -results))}});
  }
  lua_settop(L, lua_gettop(L) - results + 1);

  std::vector<ConfigIssue> issues;
  std::map<std::string, Assigned> values;
  ScriptReader reader(L, &issues, &values);
  const std::vector<Layer> layers = extends_chain(lua, reader, path, &issues);
  // Deepest base first, so each child's values replace its base's.
  for (auto layer = layers.rbegin(); layer != layers.rend(); ++layer) read_layer(reader, *layer, &values);
  for (const std::string& o : overrides) apply_override(o, &values, &issues);

  engine::ExperimentConfig config;
  if (reader.reward_shaping()) config.reward_shaping = *reader.reward_shaping();
  for (const auto& [field_path, a] : values) {
    const engine::FieldSchema& field = *engine::find_field(field_path);
    const std::string problem = engine::check_value(field, a.value);
    if (problem.empty()) {
      field.set(config, a.value);
      if (a.schedule) config.schedules.push_back(engine::ScheduledField{field_path, *a.schedule});  // sorted: map order
    } else {
      issues.push_back(ConfigIssue{a.file, a.line, field_path, problem});
    }
  }
  if (issues.empty()) check_cross_field(config, path, values, &issues);
  if (!issues.empty()) throw ConfigError(std::move(issues));
  return LoadedExperiment{std::move(config), sources_of(lua)};
}

}  // namespace moonseed::scripts
