#include "scripts/lua_dsl_list.h"

#include <optional>

#include "scripts/lua_api.h"
#include "scripts/lua_arrays.h"
#include "scripts/lua_state.h"

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

}  // namespace moonseed::scripts
