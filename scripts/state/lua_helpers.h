// Lua helpers an algorithm's folder adds to moonseed.core under its name, and so to ms.<name>
// beside its section tagger (docs/algorithms-design.md): its math on plain arrays, for tests and
// for users who check a formula by hand.
//
//   // scripts/algos/r2d2/lua_r2d2_api.cc
//   void push_r2d2_api(lua_State* L) { ... leaves one table on the stack ... }
//   const LuaHelpersRegistration kHelpers("r2d2", &push_r2d2_api);
//
// Thread-safety: registrations run during static initialisation; the rest afterwards, from any
// thread (each call on its own lua_State). Registering a name twice is a bug (std::logic_error).
#pragma once

#include <string>
#include <vector>

#include <lua.hpp>

namespace moonseed::scripts {

using LuaHelpersPush = void (*)(lua_State* L);  // pushes one table

class LuaHelpersRegistration {
 public:
  LuaHelpersRegistration(const char* name, LuaHelpersPush push);
};

// Sets table[name] to each registration's table, `table` at stack index `index`.
void set_registered_helpers(lua_State* L, int index);

// The registered names, sorted.
std::vector<std::string> registered_helper_names();

}  // namespace moonseed::scripts
