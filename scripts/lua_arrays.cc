#include "scripts/lua_arrays.h"

namespace moonseed::scripts {

std::vector<double> check_number_array(lua_State* L, int index, const char* what) {
  if (index < 0 && index > LUA_REGISTRYINDEX) index = lua_gettop(L) + index + 1;
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
  if (index < 0 && index > LUA_REGISTRYINDEX) index = lua_gettop(L) + index + 1;
  const size_t n = lua_objlen(L, index);
  size_t entries = 0;
  lua_pushnil(L);
  while (lua_next(L, index) != 0) {
    ++entries;
    lua_pop(L, 1);
  }
  return entries == n;
}

void push_number_array(lua_State* L, const std::vector<double>& values) {
  push_number_array(L, values.data(), values.size());
}

}  // namespace moonseed::scripts
