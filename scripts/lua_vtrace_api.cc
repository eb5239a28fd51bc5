// core.vtrace.targets (declared in lua_api.h). Its own file because
// engine/vtrace.h brings in LibTorch's headers, which only this binding needs.
#include <string>
#include <vector>

#include "engine/vtrace.h"
#include "scripts/config_values.h"
#include "scripts/lua_api.h"
#include "scripts/lua_arrays.h"
#include "scripts/lua_state.h"

namespace moonseed::scripts {
namespace {

const std::vector<std::string> kArrays = {"log_rhos", "discounts", "rewards", "values", "mask"};
const std::vector<std::string> kNumbers = {"bootstrap_value", "lambda", "rho_clip", "pg_rho_clip",
                                           "c_clip"};

// Misspelled parameters are errors, never silently replaced by defaults.
void check_known_keys(lua_State* L) {
  std::vector<std::string> known = kArrays;
  known.insert(known.end(), kNumbers.begin(), kNumbers.end());
  lua_pushnil(L);
  while (lua_next(L, 1) != 0) {
    lua_pop(L, 1);
    const std::string key = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : "";
    bool found = false;
    for (const std::string& k : known) found = found || k == key;
    if (!found) {
      const std::string close = closest_name(key, known);
      luaL_error(L, "vtrace.targets: unknown field '%s'%s", key.empty() ? "?" : key.c_str(),
                 close.empty() ? "" : ("; did you mean '" + close + "'?").c_str());
    }
  }
}

std::vector<double> array_field(lua_State* L, const char* name, bool required) {
  lua_getfield(L, 1, name);
  std::vector<double> values;
  if (lua_isnil(L, -1)) {
    if (required) luaL_error(L, "vtrace.targets: missing array '%s'", name);
  } else {
    values = check_number_array(L, -1, name);
  }
  lua_pop(L, 1);
  return values;
}

double number_field(lua_State* L, const char* name, const double* fallback) {
  lua_getfield(L, 1, name);
  double value = fallback != nullptr ? *fallback : 0;
  if (lua_isnil(L, -1)) {
    if (fallback == nullptr) luaL_error(L, "vtrace.targets: missing number '%s'", name);
  } else if (lua_type(L, -1) == LUA_TNUMBER) {
    value = lua_tonumber(L, -1);
  } else {
    luaL_error(L, "vtrace.targets: '%s' must be a number, got %s", name, luaL_typename(L, -1));
  }
  lua_pop(L, 1);
  return value;
}

int targets(lua_State* L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  check_known_keys(L);
  const engine::VTraceParams defaults;
  engine::VTraceParams params;
  params.lambda = number_field(L, "lambda", &defaults.lambda);
  params.rho_clip = number_field(L, "rho_clip", &defaults.rho_clip);
  params.pg_rho_clip = number_field(L, "pg_rho_clip", &defaults.pg_rho_clip);
  params.c_clip = number_field(L, "c_clip", &defaults.c_clip);
  const engine::VTraceTargets out = engine::vtrace_targets(
      array_field(L, "log_rhos", true), array_field(L, "discounts", true), array_field(L, "rewards", true),
      array_field(L, "values", true), number_field(L, "bootstrap_value", nullptr),
      array_field(L, "mask", false), params);
  lua_createtable(L, 0, 2);
  push_number_array(L, out.vs);
  lua_setfield(L, -2, "vs");
  push_number_array(L, out.pg_advantages);
  lua_setfield(L, -2, "pg_advantages");
  return 1;
}

}  // namespace

void push_vtrace_api(lua_State* L) {
  lua_createtable(L, 0, 1);
  lua_pushcfunction(L, cpp_function<targets>);
  lua_setfield(L, -2, "targets");
}

}  // namespace moonseed::scripts
