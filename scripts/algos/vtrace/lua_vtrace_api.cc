// core.vtrace.targets, and so ms.vtrace.targets: V-trace's targets (engine/vtrace/vtrace.h) on
// plain Lua arrays, registered as V-trace's Lua helpers (scripts/state/lua_helpers.h).
#include <string>
#include <vector>

#include "engine/vtrace/targets/vtrace.h"
#include "scripts/state/lua_arrays.h"
#include "scripts/state/lua_helpers.h"
#include "scripts/state/lua_state.h"

namespace moonseed::scripts {
namespace {

const std::vector<std::string> kArrays = {"log_rhos", "discounts", "rewards", "values", "mask"};
const std::vector<std::string> kNumbers = {"bootstrap_value", "lambda", "rho_clip", "pg_rho_clip",
                                           "c_clip"};

constexpr const char* kFunction = "vtrace.targets";

int targets(lua_State* L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  std::vector<std::string> known = kArrays;
  known.insert(known.end(), kNumbers.begin(), kNumbers.end());
  check_known_fields(L, 1, kFunction, known);
  const auto array = [L](const char* name, bool required) {
    return array_field(L, 1, kFunction, name, required);
  };
  const auto number = [L](const char* name, const double* fallback) {
    return number_field(L, 1, kFunction, name, fallback);
  };
  const engine::VTraceParams defaults;
  engine::VTraceParams params;
  params.lambda = number("lambda", &defaults.lambda);
  params.rho_clip = number("rho_clip", &defaults.rho_clip);
  params.pg_rho_clip = number("pg_rho_clip", &defaults.pg_rho_clip);
  params.c_clip = number("c_clip", &defaults.c_clip);
  const engine::VTraceTargets out = engine::vtrace_targets(
      array("log_rhos", true), array("discounts", true), array("rewards", true), array("values", true),
      number("bootstrap_value", nullptr), array("mask", false), params);
  lua_createtable(L, 0, 2);
  push_number_array(L, out.vs);
  lua_setfield(L, -2, "vs");
  push_number_array(L, out.pg_advantages);
  lua_setfield(L, -2, "pg_advantages");
  return 1;
}

void push_vtrace_api(lua_State* L) {
  lua_createtable(L, 0, 1);
  lua_pushcfunction(L, cpp_function<targets>);
  lua_setfield(L, -2, "targets");
}

const LuaHelpersRegistration kHelpers("vtrace", &push_vtrace_api);

}  // namespace
}  // namespace moonseed::scripts
