// ms.toy.double(x): the toy algorithm's Lua helper (scripts/state/lua_helpers.h).
#include "scripts/state/lua_helpers.h"
#include "scripts/state/lua_state.h"

namespace moonseed::toy {
namespace {

int twice(lua_State* L) {
  lua_pushnumber(L, 2 * luaL_checknumber(L, 1));
  return 1;
}

void push_toy_api(lua_State* L) {
  lua_createtable(L, 0, 1);
  lua_pushcfunction(L, scripts::cpp_function<twice>);
  lua_setfield(L, -2, "double");
}

const scripts::LuaHelpersRegistration kHelpers("toy", &push_toy_api);

}  // namespace
}  // namespace moonseed::toy
