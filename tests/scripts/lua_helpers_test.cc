// The algorithms' Lua helpers (scripts/state/lua_helpers.h): found by name, each once.
#include "scripts/state/lua_helpers.h"

#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace moonseed::scripts {
namespace {

void push_nothing(lua_State* L) { lua_newtable(L); }

TEST(LuaHelpers, EveryLinkedAlgorithmsHelpersAreRegisteredOnceByName) {
  const std::vector<std::string> names = registered_helper_names();
  EXPECT_EQ(names, (std::vector<std::string>{"r2d2", "vtrace"}));
  try {
    LuaHelpersRegistration again("r2d2", &push_nothing);
    FAIL() << "a second r2d2 was taken";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("registered twice"), std::string::npos) << e.what();
  }
  EXPECT_EQ(registered_helper_names(), names);
}

TEST(LuaHelpers, EachIsSetOnTheTableUnderItsName) {
  lua_State* L = luaL_newstate();
  lua_newtable(L);
  lua_pushinteger(L, 7);  // something above the table: a negative index still finds it
  set_registered_helpers(L, -2);
  lua_pop(L, 1);
  for (const std::string& name : registered_helper_names()) {
    lua_getfield(L, -1, name.c_str());
    EXPECT_TRUE(lua_istable(L, -1)) << name;
    lua_pop(L, 1);
  }
  lua_close(L);
}

}  // namespace
}  // namespace moonseed::scripts
