// Lua array tables <-> std::vector<double>, with argument errors in the style
// of luaL_check* ("bad argument #2 to 'set_state' (...)" or naming a field).
//
// Functions on a caller's lua_State; they raise Lua errors, never throw.
#pragma once

#include <string>
#include <vector>

#include <lua.hpp>

namespace moonseed::scripts {

// The array table at `index` (keys 1..n, numbers only). `what` names it in
// errors: "log_rhos", "argument #2".
std::vector<double> check_number_array(lua_State* L, int index, const char* what);

void push_number_array(lua_State* L, const std::vector<double>& values);

// True when the table at `index` has exactly the keys 1..#t (a plain list:
// no named entries, no holes).
bool is_sequence(lua_State* L, int index);

template <typename T>
void push_number_array(lua_State* L, const T* values, size_t count) {
  lua_createtable(L, static_cast<int>(count), 0);
  for (size_t i = 0; i < count; ++i) {
    lua_pushnumber(L, static_cast<lua_Number>(values[i]));
    lua_rawseti(L, -2, static_cast<int>(i + 1));
  }
}

}  // namespace moonseed::scripts
