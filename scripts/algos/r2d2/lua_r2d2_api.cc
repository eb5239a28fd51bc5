// core.r2d2, and so ms.r2d2: R2D2's math (engine/r2d2/r2d2.h) on one stream of plain Lua
// arrays, in double precision, registered as R2D2's Lua helpers (scripts/state/lua_helpers.h).
//
//   r2d2.value_rescale(x [, eps])          x a number or an array -> the same shape
//   r2d2.inverse_value_rescale(x [, eps])
//   r2d2.n_step_targets{rewards, terminated, bootstrap_q, [truncated], [valid], [n], [gamma], [eps]}
//       -> {targets = {...}, mask = {...}}   (truncated defaults to zeros, valid to ones)
//   r2d2.priorities{targets, q_taken, [mask], [burn_in], [eta]} -> the sequence's priority
//   r2d2.ape_x_epsilon(i, N [, base [, alpha]]) -> epsilon of env i (0-based) out of N
#include <cmath>
#include <string>
#include <vector>

#include "engine/r2d2/r2d2.h"
#include "scripts/state/lua_arrays.h"
#include "scripts/state/lua_helpers.h"
#include "scripts/state/lua_state.h"

namespace moonseed::scripts {
namespace {

// value_rescale and its inverse: a number gives a number, an array an array.
template <double (*F)(double, double)>
int rescale(lua_State* L) {
  const double eps = luaL_optnumber(L, 2, engine::kValueRescaleEps);
  if (lua_type(L, 1) == LUA_TNUMBER) {
    lua_pushnumber(L, F(lua_tonumber(L, 1), eps));
    return 1;
  }
  if (lua_type(L, 1) != LUA_TTABLE) luaL_typerror(L, 1, "number or array of numbers");
  std::vector<double> values = check_number_array(L, 1, "argument #1");
  for (double& v : values) v = F(v, eps);
  push_number_array(L, values);
  return 1;
}

double value_rescale(double x, double eps) { return engine::value_rescale(x, eps); }
double inverse_value_rescale(double x, double eps) { return engine::inverse_value_rescale(x, eps); }

// A whole number field: n, burn_in.
int64_t count_field(lua_State* L, const char* function, const char* name, double fallback) {
  const double value = number_field(L, 1, function, name, &fallback);
  if (value != std::floor(value) || std::abs(value) > 1e15) {
    luaL_error(L, "%s: '%s' must be a whole number, got %f", function, name, value);
  }
  return static_cast<int64_t>(value);
}

int n_step_targets(lua_State* L) {
  constexpr const char* kFunction = "r2d2.n_step_targets";
  luaL_checktype(L, 1, LUA_TTABLE);
  check_known_fields(L, 1, kFunction,
                     {"rewards", "terminated", "truncated", "valid", "bootstrap_q", "n", "gamma", "eps"});
  engine::NStepStream in;
  in.rewards = array_field(L, 1, kFunction, "rewards", true);
  in.terminated = array_field(L, 1, kFunction, "terminated", true);
  in.bootstrap_q = array_field(L, 1, kFunction, "bootstrap_q", true);
  in.truncated = array_field(L, 1, kFunction, "truncated", false);
  if (in.truncated.empty()) in.truncated.assign(in.rewards.size(), 0.0);
  in.valid = array_field(L, 1, kFunction, "valid", false);
  if (in.valid.empty()) in.valid.assign(in.rewards.size(), 1.0);
  engine::NStepParams params;
  params.n = count_field(L, kFunction, "n", static_cast<double>(params.n));
  params.gamma = number_field(L, 1, kFunction, "gamma", &params.gamma);
  params.eps = number_field(L, 1, kFunction, "eps", &params.eps);

  const engine::NStepStreamTargets out = engine::n_step_targets(in, params);
  lua_createtable(L, 0, 2);
  push_number_array(L, out.targets);
  lua_setfield(L, -2, "targets");
  push_number_array(L, out.mask);
  lua_setfield(L, -2, "mask");
  return 1;
}

int priorities(lua_State* L) {
  constexpr const char* kFunction = "r2d2.priorities";
  luaL_checktype(L, 1, LUA_TTABLE);
  check_known_fields(L, 1, kFunction, {"targets", "q_taken", "mask", "burn_in", "eta"});
  engine::TdStream in;
  in.targets = array_field(L, 1, kFunction, "targets", true);
  in.q_taken = array_field(L, 1, kFunction, "q_taken", true);
  in.mask = array_field(L, 1, kFunction, "mask", false);
  if (in.mask.empty()) in.mask.assign(in.targets.size(), 1.0);
  in.burn_in = count_field(L, kFunction, "burn_in", 0);
  const double default_eta = 0.9;
  const double eta = number_field(L, 1, kFunction, "eta", &default_eta);
  lua_pushnumber(L, engine::sequence_priority(in, eta));
  return 1;
}

int ape_x_epsilon(lua_State* L) {
  const lua_Integer i = luaL_checkinteger(L, 1);
  const lua_Integer n = luaL_checkinteger(L, 2);
  lua_pushnumber(L, engine::ape_x_epsilon(i, n, luaL_optnumber(L, 3, 0.4), luaL_optnumber(L, 4, 7)));
  return 1;
}

const luaL_Reg kFunctions[] = {
    {"value_rescale", cpp_function<rescale<value_rescale>>},
    {"inverse_value_rescale", cpp_function<rescale<inverse_value_rescale>>},
    {"n_step_targets", cpp_function<n_step_targets>},
    {"priorities", cpp_function<priorities>},
    {"ape_x_epsilon", cpp_function<ape_x_epsilon>},
    {nullptr, nullptr},
};

void push_r2d2_api(lua_State* L) {
  lua_newtable(L);
  luaL_register(L, nullptr, kFunctions);
}

const LuaHelpersRegistration kHelpers("r2d2", &push_r2d2_api);

}  // namespace
}  // namespace moonseed::scripts
