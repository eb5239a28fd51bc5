#include "scripts/api/lua_api.h"

#include <atomic>
#include <cmath>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "base/constants.h"
#include "envs/env.h"
#include "scripts/api/lua_layers.h"
#include "scripts/api/lua_wrappers.h"
#include "engine/config/schedule.h"
#include "engine/config/schema.h"
#include "engine/config/section_registry.h"
#include "scripts/state/lua_arrays.h"
#include "scripts/state/lua_helpers.h"
#include "scripts/state/lua_state.h"
#include "scripts/api/shaping_function.h"

namespace moonseed::scripts {
namespace {

constexpr const char* kEnvMetatable = "moonseed.Env";

// The userdata behind an Env: the env and the byte buffers its interface takes.
struct LuaEnv {
  std::unique_ptr<envs::Env> env;
  std::vector<unsigned char> observation;
  std::vector<unsigned char> action;
  bool needs_reset = true;  // before the first reset and after an episode ends
};

LuaEnv* check_env(lua_State* L) {
  LuaEnv* e = static_cast<LuaEnv*>(luaL_checkudata(L, 1, kEnvMetatable));
  if (!e->env) luaL_error(L, "Env has been closed");
  return e;
}

void push_observation(lua_State* L, const LuaEnv& e) {
  const envs::Space& space = e.env->spec().observation;
  const size_t n = static_cast<size_t>(space.numel());
  if (space.kind == envs::SpaceKind::kDiscrete) {
    int32_t index = 0;
    std::memcpy(&index, e.observation.data(), sizeof index);
    lua_pushinteger(L, index);
  } else if (space.dtype == envs::DType::kUInt8) {
    push_number_array(L, e.observation.data(), n);
  } else {
    std::vector<float> values(n);
    std::memcpy(values.data(), e.observation.data(), n * sizeof(float));
    push_number_array(L, values.data(), n);
  }
}

uint64_t check_seed(lua_State* L, int index) {
  const lua_Number seed = luaL_checknumber(L, index);
  if (seed < 0 || seed != std::floor(seed) || seed > base::kMaxExactInteger) {
    luaL_argerror(L, index, "seed must be an integer in [0, 2^53]");
  }
  return static_cast<uint64_t>(seed);
}

// Writes the Lua action at `index` into e->action.
void check_action(lua_State* L, int index, LuaEnv* e) {
  const envs::Space& space = e->env->spec().action;
  if (space.kind == envs::SpaceKind::kDiscrete) {
    const lua_Number a = luaL_checknumber(L, index);
    if (a != std::floor(a) || a < 0 || a >= static_cast<lua_Number>(space.n)) {
      luaL_error(L, "bad argument #%d to 'step' (action must be an integer in [0, %d), got %f)", index - 1,
                 static_cast<int>(space.n), static_cast<double>(a));
    }
    const int32_t action = static_cast<int32_t>(a);
    std::memcpy(e->action.data(), &action, sizeof action);
    return;
  }
  const size_t n = static_cast<size_t>(space.numel());
  std::vector<float> values(n);
  if (lua_type(L, index) == LUA_TNUMBER && n == 1) {
    values[0] = static_cast<float>(lua_tonumber(L, index));
  } else {
    const std::vector<double> given = check_number_array(L, index, "action");
    if (given.size() != n) {
      luaL_error(L, "bad argument #%d to 'step' (action needs %d numbers, got %d)", index - 1,
                 static_cast<int>(n), static_cast<int>(given.size()));
    }
    for (size_t i = 0; i < n; ++i) values[i] = static_cast<float>(given[i]);
  }
  std::memcpy(e->action.data(), values.data(), n * sizeof(float));
}

int env_reset(lua_State* L) {
  LuaEnv* e = check_env(L);
  std::optional<uint64_t> seed;
  if (!lua_isnoneornil(L, 2)) seed = check_seed(L, 2);
  e->env->reset(seed, e->observation.data());
  e->needs_reset = false;
  push_observation(L, *e);
  return 1;
}

int env_step(lua_State* L) {
  LuaEnv* e = check_env(L);
  if (e->needs_reset) {
    return luaL_error(L, "env:step(): %s; call env:reset() first",
                      "no episode is running (not reset yet, or the last one ended)");
  }
  check_action(L, 2, e);
  const envs::StepResult r = e->env->step(e->action.data(), e->observation.data());
  e->needs_reset = r.terminated || r.truncated;
  push_observation(L, *e);
  lua_pushnumber(L, r.reward);
  lua_pushboolean(L, r.terminated);
  lua_pushboolean(L, r.truncated);
  return 4;
}

int env_get_state(lua_State* L) {
  push_number_array(L, check_env(L)->env->get_state());
  return 1;
}

int env_set_state(lua_State* L) {
  LuaEnv* e = check_env(L);
  e->env->set_state(check_number_array(L, 2, "state"));
  // A saved state is a state inside an episode: stepping may go on.
  e->needs_reset = false;
  return 0;
}

void push_space(lua_State* L, const envs::Space& space) {
  lua_createtable(L, 0, 6);
  lua_pushstring(L, space.kind == envs::SpaceKind::kDiscrete ? "discrete" : "box");
  lua_setfield(L, -2, "kind");
  lua_pushstring(L, space.dtype == envs::DType::kUInt8 ? "uint8" : "float32");
  lua_setfield(L, -2, "dtype");
  lua_pushnumber(L, static_cast<lua_Number>(space.n));
  lua_setfield(L, -2, "n");
  push_number_array(L, space.shape.data(), space.shape.size());
  lua_setfield(L, -2, "shape");
  push_number_array(L, space.low.data(), space.low.size());
  lua_setfield(L, -2, "low");
  push_number_array(L, space.high.data(), space.high.size());
  lua_setfield(L, -2, "high");
}

int env_spec(lua_State* L) {
  const envs::EnvSpec& spec = check_env(L)->env->spec();
  lua_createtable(L, 0, 4);
  lua_pushlstring(L, spec.id.data(), spec.id.size());
  lua_setfield(L, -2, "id");
  push_space(L, spec.observation);
  lua_setfield(L, -2, "observation");
  push_space(L, spec.action);
  lua_setfield(L, -2, "action");
  lua_pushinteger(L, spec.max_episode_steps);
  lua_setfield(L, -2, "max_episode_steps");
  return 1;
}

int env_tostring(lua_State* L) {
  LuaEnv* e = static_cast<LuaEnv*>(luaL_checkudata(L, 1, kEnvMetatable));
  lua_pushfstring(L, "moonseed.Env(%s)", e->env ? e->env->spec().id.c_str() : "closed");
  return 1;
}

int env_gc(lua_State* L) {
  static_cast<LuaEnv*>(luaL_checkudata(L, 1, kEnvMetatable))->~LuaEnv();
  return 0;
}

int env_make(lua_State* L) {
  const std::string id = luaL_checkstring(L, 1);
  envs::EnvOptions options;
  if (!lua_isnoneornil(L, 2)) {
    luaL_checktype(L, 2, LUA_TTABLE);
    lua_pushnil(L);
    while (lua_next(L, 2) != 0) {
      if (lua_type(L, -2) == LUA_TSTRING && std::string(lua_tostring(L, -2)) == "plugin") {
        return luaL_argerror(L, 2, "ms.env.make runs built-in envs only, in this process; a plugin env "
                                   "(env.plugin) runs only in actors (docs/env-plugins.md)");
      }
      if (lua_type(L, -2) == LUA_TSTRING && std::string(lua_tostring(L, -2)) == "python") {
        return luaL_argerror(L, 2, "ms.env.make runs built-in envs only, in this process; a Python env "
                                   "(env.python) runs only in Python actors (docs/python-actors.md)");
      }
      if (lua_type(L, -2) != LUA_TSTRING || lua_type(L, -1) != LUA_TNUMBER) {
        return luaL_argerror(L, 2, "options must map names to numbers, e.g. {max_episode_steps = 200}");
      }
      options.emplace_back(lua_tostring(L, -2), lua_tonumber(L, -1));
      lua_pop(L, 1);
    }
  }
  std::unique_ptr<envs::Env> env = envs::make_env(id, options);
  void* memory = lua_newuserdata(L, sizeof(LuaEnv));
  LuaEnv* e = new (memory) LuaEnv();
  e->observation.resize(static_cast<size_t>(env->spec().observation.byte_size()));
  e->action.resize(static_cast<size_t>(env->spec().action.byte_size()));
  e->env = std::move(env);
  luaL_getmetatable(L, kEnvMetatable);
  lua_setmetatable(L, -2);
  return 1;
}

int env_ids(lua_State* L) {
  const std::vector<std::string> ids = envs::env_ids();
  lua_createtable(L, static_cast<int>(ids.size()), 0);
  for (size_t i = 0; i < ids.size(); ++i) {
    lua_pushlstring(L, ids[i].data(), ids[i].size());
    lua_rawseti(L, -2, static_cast<int>(i + 1));
  }
  return 1;
}

std::atomic<ExperimentLoader>& experiment_loader() {
  static std::atomic<ExperimentLoader> loader{nullptr};
  return loader;
}

int load_experiment_lua(lua_State* L) {
  const std::string path = luaL_checkstring(L, 1);
  std::vector<std::string> overrides;
  if (!lua_isnoneornil(L, 2)) {
    luaL_checktype(L, 2, LUA_TTABLE);
    const size_t n = lua_objlen(L, 2);
    for (size_t i = 1; i <= n; ++i) {
      lua_rawgeti(L, 2, static_cast<int>(i));
      if (lua_type(L, -1) != LUA_TSTRING) return luaL_argerror(L, 2, "overrides must be strings \"field=value\"");
      overrides.emplace_back(lua_tostring(L, -1));
      lua_pop(L, 1);
    }
  }
  const ExperimentLoader load = experiment_loader().load();
  if (load == nullptr) return luaL_error(L, "load_experiment: no experiment loader is linked into this program");
  push_config(L, load(path, overrides));
  return 1;
}

// {schedule = KIND, axis = AXIS, points = {{x, value}, ...}}: what ms.linear and the others build.
void push_schedule(lua_State* L, const engine::Schedule& schedule) {
  lua_createtable(L, 0, 3);
  lua_pushstring(L, engine::kind_name(schedule.kind));
  lua_setfield(L, -2, "schedule");
  lua_pushstring(L, engine::axis_name(schedule.axis));
  lua_setfield(L, -2, "axis");
  lua_createtable(L, static_cast<int>(schedule.points.size()), 0);
  for (size_t i = 0; i < schedule.points.size(); ++i) {
    const double point[] = {schedule.points[i].first, schedule.points[i].second};
    push_number_array(L, point, 2);
    lua_rawseti(L, -2, static_cast<int>(i + 1));
  }
  lua_setfield(L, -2, "points");
}

void push_field_value(lua_State* L, const engine::FieldValue& value) {
  if (const auto* d = std::get_if<double>(&value)) {
    lua_pushnumber(L, *d);
  } else if (const auto* i = std::get_if<int64_t>(&value)) {
    lua_pushnumber(L, static_cast<lua_Number>(*i));
  } else if (const auto* s = std::get_if<std::string>(&value)) {
    lua_pushlstring(L, s->data(), s->size());
  } else if (const auto* b = std::get_if<bool>(&value)) {
    lua_pushboolean(L, *b);
  } else if (const auto* list = std::get_if<std::vector<int64_t>>(&value)) {
    push_number_array(L, list->data(), list->size());
  } else if (const auto* layers = std::get_if<models::LayerList>(&value)) {
    push_layer_list(L, *layers);
  } else if (const auto* wrappers = std::get_if<envs::WrapperList>(&value)) {
    push_wrapper_list(L, *wrappers);
  } else {
    lua_newtable(L);
    for (const auto& [name, number] : std::get<engine::NumberMap>(value)) {
      lua_pushnumber(L, number);
      lua_setfield(L, -2, name.c_str());
    }
  }
}

const luaL_Reg kEnvMethods[] = {
    {"reset", cpp_function<env_reset>},
    {"step", cpp_function<env_step>},
    {"get_state", cpp_function<env_get_state>},
    {"set_state", cpp_function<env_set_state>},
    {"spec", cpp_function<env_spec>},
    {nullptr, nullptr},
};

const luaL_Reg kEnvFunctions[] = {
    {"make", cpp_function<env_make>},
    {"ids", cpp_function<env_ids>},
    {nullptr, nullptr},
};

int open_core(lua_State* L) {
  if (luaL_newmetatable(L, kEnvMetatable)) {
    lua_newtable(L);
    luaL_register(L, nullptr, kEnvMethods);
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, env_gc);
    lua_setfield(L, -2, "__gc");
    lua_pushcfunction(L, env_tostring);
    lua_setfield(L, -2, "__tostring");
  }
  lua_pop(L, 1);

  lua_newtable(L);
  lua_newtable(L);
  luaL_register(L, nullptr, kEnvFunctions);
  lua_setfield(L, -2, "env");
  push_nn_api(L);
  lua_setfield(L, -2, "nn");
  set_registered_helpers(L, -1);  // the algorithms' math: core.vtrace, core.r2d2, ...
  push_log_api(L);
  lua_setfield(L, -2, "log");
  // The algorithms' config sections (engine/config/section_registry.h): init.lua makes ms.<name>.
  lua_newtable(L);
  int index = 1;
  for (const engine::SectionInfo& section : engine::registered_sections()) {
    lua_pushstring(L, section.name.c_str());
    lua_rawseti(L, -2, index++);
  }
  lua_setfield(L, -2, "sections");
  lua_pushcfunction(L, cpp_function<load_experiment_lua>);
  lua_setfield(L, -2, "load_experiment");
  return 1;
}

}  // namespace

void open_moonseed_api(lua_State* L) {
  lua_getglobal(L, "package");
  lua_getfield(L, -1, "preload");
  lua_pushcfunction(L, open_core);
  lua_setfield(L, -2, "moonseed.core");
  lua_pop(L, 2);
}

void push_config(lua_State* L, const engine::ExperimentConfig& config) {
  lua_newtable(L);
  const int root = lua_gettop(L);
  for (const engine::FieldSchema& f : engine::config_schema()) {
    // Walk (creating) the section tables of "a.b.c", then set the leaf.
    lua_pushvalue(L, root);
    size_t start = 0;
    for (size_t dot = f.path.find('.'); dot != std::string::npos; dot = f.path.find('.', start)) {
      const std::string section = f.path.substr(start, dot - start);
      lua_getfield(L, -1, section.c_str());
      if (!lua_istable(L, -1)) {
        lua_pop(L, 1);
        lua_newtable(L);
        lua_pushvalue(L, -1);
        lua_setfield(L, -3, section.c_str());
      }
      lua_remove(L, -2);
      start = dot + 1;
    }
    if (const engine::Schedule* schedule = engine::find_schedule(config, f.path)) {
      push_schedule(L, *schedule);  // the schedule, not only its value at frame 0
    } else {
      push_field_value(L, f.get(config));
    }
    lua_setfield(L, -2, f.path.substr(start).c_str());
    lua_pop(L, 1);
  }
  if (!config.reward_shaping.source.empty()) {
    push_shaping_function(L, config.reward_shaping);
    lua_setfield(L, root, engine::kRewardShapingPath);
  }
}

void set_experiment_loader(ExperimentLoader loader) { experiment_loader().store(loader); }

}  // namespace moonseed::scripts
