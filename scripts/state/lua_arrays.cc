#include "scripts/state/lua_arrays.h"

#include <algorithm>

#include "base/text.h"
#include "scripts/state/lua_state.h"

namespace moonseed::scripts {

std::vector<double> check_number_array(lua_State* L, int index, const char* what) {
  index = absolute_index(L, index);
  if (lua_type(L, index) != LUA_TTABLE) {
    luaL_error(L, "%s: expected an array of numbers, got %s", what, luaL_typename(L, index));
  }
  const size_t n = lua_objlen(L, index);
  std::vector<double> values(n);
  for (size_t i = 0; i < n; ++i) {
    lua_rawgeti(L, index, static_cast<int>(i + 1));
    if (lua_type(L, -1) != LUA_TNUMBER) {
      luaL_error(L, "%s[%d]: expected a number, got %s", what, static_cast<int>(i + 1),
                 luaL_typename(L, -1));
    }
    values[i] = lua_tonumber(L, -1);
    lua_pop(L, 1);
  }
  return values;
}

bool is_sequence(lua_State* L, int index) {
  index = absolute_index(L, index);
  const size_t n = lua_objlen(L, index);
  size_t entries = 0;
  lua_pushnil(L);
  while (lua_next(L, index) != 0) {
    ++entries;
    lua_pop(L, 1);
  }
  return entries == n;
}

void check_known_fields(lua_State* L, int index, const char* function,
                        const std::vector<std::string>& known) {
  index = absolute_index(L, index);
  lua_pushnil(L);
  while (lua_next(L, index) != 0) {
    lua_pop(L, 1);
    const std::string key = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : "";
    if (std::find(known.begin(), known.end(), key) != known.end()) continue;
    const std::string close = base::closest_name(key, known);
    luaL_error(L, "%s: unknown field '%s'%s", function, key.empty() ? "?" : key.c_str(),
               close.empty() ? "" : ("; did you mean '" + close + "'?").c_str());
  }
}

std::vector<double> array_field(lua_State* L, int index, const char* function, const char* name,
                                bool required) {
  lua_getfield(L, absolute_index(L, index), name);
  std::vector<double> values;
  if (!lua_isnil(L, -1)) {
    values = check_number_array(L, -1, name);
  } else if (required) {
    luaL_error(L, "%s: missing array '%s'", function, name);
  }
  lua_pop(L, 1);
  return values;
}

double number_field(lua_State* L, int index, const char* function, const char* name,
                    const double* fallback) {
  lua_getfield(L, absolute_index(L, index), name);
  double value = fallback != nullptr ? *fallback : 0;
  if (lua_type(L, -1) == LUA_TNUMBER) {
    value = lua_tonumber(L, -1);
  } else if (!lua_isnil(L, -1)) {
    luaL_error(L, "%s: '%s' must be a number, got %s", function, name, luaL_typename(L, -1));
  } else if (fallback == nullptr) {
    luaL_error(L, "%s: missing number '%s'", function, name);
  }
  lua_pop(L, 1);
  return value;
}

void push_number_array(lua_State* L, const std::vector<double>& values) {
  push_number_array(L, values.data(), values.size());
}

}  // namespace moonseed::scripts
