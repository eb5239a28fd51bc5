#include "scripts/api/lua_wrappers.h"

#include <utility>
#include <vector>

namespace moonseed::scripts {
namespace {

// Reads the element at the top of the stack into `out`; "" or the problem, with *field set to
// the part at fault.
std::string read_element(lua_State* L, const std::string& name, envs::WrapperSpec* out, std::string* field) {
  *field = name;
  const int type = lua_type(L, -1);
  std::string kind;
  std::vector<std::pair<std::string, double>> given;
  if (type == LUA_TSTRING) {
    kind = lua_tostring(L, -1);
  } else if (type == LUA_TTABLE) {
    const int table = lua_gettop(L);
    lua_getfield(L, table, "kind");
    if (lua_type(L, -1) == LUA_TNIL) {
      lua_pop(L, 1);
      lua_rawgeti(L, table, 1);
    }
    if (lua_type(L, -1) != LUA_TSTRING) {
      const std::string got = lua_typename(L, lua_type(L, -1));
      lua_pop(L, 1);
      return "expected the wrapper's kind as a string (kind = \"frame_stack\" or first), got " + got;
    }
    kind = lua_tostring(L, -1);
    lua_pop(L, 1);
    lua_pushnil(L);
    while (lua_next(L, table) != 0) {
      const int key_type = lua_type(L, -2);
      const int value_type = lua_type(L, -1);
      if (key_type == LUA_TNUMBER && lua_tonumber(L, -2) == 1) {
        // the kind, read above
      } else if (key_type != LUA_TSTRING) {
        lua_pop(L, 2);
        return "unexpected positional entry; a wrapper takes its kind, then named parameters, e.g. "
               "{\"frame_stack\", n = 4}";
      } else if (std::string key = lua_tostring(L, -2); key != "kind") {
        if (value_type == LUA_TNUMBER) {
          given.emplace_back(key, lua_tonumber(L, -1));
        } else if (value_type == LUA_TBOOLEAN) {
          given.emplace_back(key, lua_toboolean(L, -1) ? 1.0 : 0.0);
        } else {
          *field = name + "." + key;
          const std::string got = lua_typename(L, value_type);
          lua_pop(L, 2);
          return "expected a number, got " + got;
        }
      }
      lua_pop(L, 1);
    }
  } else {
    return std::string("expected a wrapper (a table such as ms.wrap.frame_stack(4), or a name such as "
                       "\"clip_reward\"), got ") +
           lua_typename(L, type);
  }
  std::string problem = envs::make_wrapper(kind, given, out);
  if (!problem.empty()) return problem;
  *field = name + " (" + kind + ")";
  return envs::wrapper_problem(*out);
}

}  // namespace

WrapperListRead read_wrapper_list(lua_State* L, int index, const std::string& path) {
  WrapperListRead read;
  envs::WrapperList wrappers;
  const auto element = [&](size_t, size_t, const std::string& name) {
    envs::WrapperSpec wrapper;
    const std::string problem = read_element(L, name, &wrapper, &read.field);
    if (problem.empty()) wrappers.push_back(std::move(wrapper));
    return problem;
  };
  if (read_dsl_list(L, index, path, "expected a list of wrappers like {ms.wrap.frame_stack(4), ms.wrap.time_limit(1000)}",
                    envs::kMaxWrappers, element, &read)) {
    read.wrappers = std::move(wrappers);
  }
  return read;
}

void push_wrapper_list(lua_State* L, const envs::WrapperList& wrappers) {
  lua_createtable(L, static_cast<int>(wrappers.size()), 0);
  for (size_t i = 0; i < wrappers.size(); ++i) {
    const envs::WrapperSpec& w = wrappers[i];
    lua_createtable(L, 0, static_cast<int>(w.params.size()) + 1);
    lua_pushlstring(L, w.kind.data(), w.kind.size());
    lua_setfield(L, -2, "kind");
    for (const auto& [name, value] : w.params) {
      lua_pushnumber(L, value);
      lua_setfield(L, -2, name.c_str());
    }
    lua_rawseti(L, -2, static_cast<int>(i + 1));
  }
}

}  // namespace moonseed::scripts
