#include "scripts/api/lua_dsl_list.h"

#include <optional>

#include "scripts/state/lua_arrays.h"
#include "scripts/state/lua_state.h"

namespace moonseed::scripts {

bool read_dsl_list(lua_State* L, int index, const std::string& path, const std::string& expected,
                   size_t max_elements,
                   const std::function<std::string(size_t k, size_t n, const std::string& name)>& read_element,
                   DslListFault* fault) {
  fault->field = path;
  index = absolute_index(L, index);
  if (lua_type(L, index) != LUA_TTABLE || !is_sequence(L, index)) {
    fault->problem = expected + ", got " +
                     std::string(lua_type(L, index) == LUA_TTABLE ? "a table with named or missing entries"
                                                                 : lua_typename(L, lua_type(L, index)));
    return false;
  }
  const size_t n = lua_objlen(L, index);
  if (n > max_elements) {
    fault->problem = "at most " + std::to_string(max_elements) + " entries, got " + std::to_string(n);
    return false;
  }
  for (size_t k = 1; k <= n; ++k) {
    lua_rawgeti(L, index, static_cast<int>(k));
    const std::string name = path + "[" + std::to_string(k) + "]";  // not fault->field: the reader may change that
    fault->field = name;
    const std::string problem = read_element(k, n, name);
    if (!problem.empty()) {
      if (std::optional<DslOrigin> origin = dsl_origin(L, -1)) {
        fault->file = origin->file;
        fault->line = origin->line;
      }
      lua_pop(L, 1);
      fault->problem = problem;
      return false;
    }
    lua_pop(L, 1);
  }
  fault->field = path;
  return true;
}

std::optional<DslOrigin> dsl_origin(lua_State* L, int index) {
  if (index < 0 && index > LUA_REGISTRYINDEX) index = lua_gettop(L) + index + 1;
  const int top = lua_gettop(L);
  std::optional<DslOrigin> origin;
  lua_getfield(L, LUA_REGISTRYINDEX, "_LOADED");
  lua_getfield(L, -1, "moonseed");
  if (lua_istable(L, -1)) {
    lua_getfield(L, -1, "origin");
    lua_pushvalue(L, index);
    if (lua_isfunction(L, -2) && lua_pcall(L, 1, 2, 0) == 0 && lua_type(L, -2) == LUA_TSTRING &&
        lua_type(L, -1) == LUA_TNUMBER) {
      const std::string source = lua_tostring(L, -2);
      if (source.size() > 1 && source[0] == '@') {
        origin = DslOrigin{source.substr(1), static_cast<int>(lua_tointeger(L, -1))};
      }
    }
  }
  lua_settop(L, top);
  return origin;
}

}  // namespace moonseed::scripts
