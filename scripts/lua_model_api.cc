// core.nn (declared in lua_api.h) and dsl_origin. Its own file because
// models/torso.h brings in LibTorch's headers, which only this binding needs.
#include <string>

#include "models/torso.h"
#include "scripts/lua_layers.h"
#include "scripts/lua_api.h"
#include "scripts/lua_state.h"

namespace moonseed::scripts {
namespace {

int preset(lua_State* L) {
  const std::string name = luaL_checkstring(L, 1);
  if (name == "mlp" || name == "layers") {
    return luaL_error(L, "nn.preset: '%s' is not a preset (presets: nature_cnn, impala_resnet)", name.c_str());
  }
  models::LayerList layers;
  try {
    layers = models::preset_layers(name);
  } catch (const std::invalid_argument& e) {
    return luaL_error(L, "nn.preset: %s", e.what());
  }
  push_layer_list(L, layers);
  return 1;
}

}  // namespace

void push_nn_api(lua_State* L) {
  lua_createtable(L, 0, 1);
  lua_pushcfunction(L, cpp_function<preset>);
  lua_setfield(L, -2, "preset");
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
