#include "scripts/api/script_runner.h"

#include <cstdio>

#include "base/log.h"
#include "scripts/api/lua_api.h"
#include "scripts/api/lua_control_api.h"
#include "scripts/state/lua_state.h"

namespace moonseed::scripts {

int run_script_file(const std::string& path, const std::vector<std::string>& args) {
  try {
    LuaState lua(Sandbox::kOff);
    lua.set_search_path(default_search_path(path));
    lua_State* L = lua.get();
    open_moonseed_api(L);
    open_control_api(L);
    lua_createtable(L, static_cast<int>(args.size()), 1);
    lua_pushlstring(L, path.data(), path.size());
    lua_rawseti(L, -2, 0);
    for (size_t i = 0; i < args.size(); ++i) {
      lua_pushlstring(L, args[i].data(), args[i].size());
      lua_rawseti(L, -2, static_cast<int>(i + 1));
    }
    lua_setglobal(L, "arg");
    lua.run_file(path, args);
    return 0;
  } catch (const std::exception& e) {
    base::log(base::Severity::kError, "script", e.what());
    return 1;
  }
}

}  // namespace moonseed::scripts
