#include "scripts/state/lua_helpers.h"

#include <map>
#include <stdexcept>

namespace moonseed::scripts {
namespace {

std::map<std::string, LuaHelpersPush>& registry() {
  static std::map<std::string, LuaHelpersPush> helpers;
  return helpers;
}

}  // namespace

LuaHelpersRegistration::LuaHelpersRegistration(const char* name, LuaHelpersPush push) {
  if (!registry().emplace(name, push).second) {
    throw std::logic_error(std::string("Lua helpers '") + name + "' registered twice");
  }
}

void set_registered_helpers(lua_State* L, int index) {
  const int table = index < 0 ? lua_gettop(L) + index + 1 : index;
  for (const auto& [name, push] : registry()) {
    push(L);
    lua_setfield(L, table, name.c_str());
  }
}

std::vector<std::string> registered_helper_names() {
  std::vector<std::string> names;
  for (const auto& entry : registry()) names.push_back(entry.first);
  return names;
}

}  // namespace moonseed::scripts
