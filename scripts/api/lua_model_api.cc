// core.nn (declared in lua_api.h). Its own file because
// models/torso.h brings in LibTorch's headers, which only this binding needs.
#include <string>

#include "models/torso.h"
#include "scripts/api/lua_layers.h"
#include "scripts/api/lua_api.h"
#include "scripts/state/lua_state.h"

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

}  // namespace moonseed::scripts
