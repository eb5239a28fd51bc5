// Lua array tables <-> std::vector<double>, with argument errors in the style
// of luaL_check* ("bad argument #2 to 'set_state' (...)" or naming a field),
// and the named fields of a function called with one table, f{name = value}.
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

// Named arguments: the table at `index` holds fields of `function` (used in
// errors: "vtrace.targets: missing array 'rewards'").
// A key outside `known` is an error ("unknown field 'lamda'; did you mean
// 'lambda'?"): a misspelled parameter never falls back to its default.
void check_known_fields(lua_State* L, int index, const char* function,
                        const std::vector<std::string>& known);
// Field `name` as an array of numbers; when absent, an error if `required`,
// else an empty vector.
std::vector<double> array_field(lua_State* L, int index, const char* function, const char* name,
                                bool required);
// Field `name` as a number; when absent, *fallback, or an error when fallback is null.
double number_field(lua_State* L, int index, const char* function, const char* name,
                    const double* fallback);

template <typename T>
void push_number_array(lua_State* L, const T* values, size_t count) {
  lua_createtable(L, static_cast<int>(count), 0);
  for (size_t i = 0; i < count; ++i) {
    lua_pushnumber(L, static_cast<lua_Number>(values[i]));
    lua_rawseti(L, -2, static_cast<int>(i + 1));
  }
}

}  // namespace moonseed::scripts
