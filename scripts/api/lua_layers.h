// Declared model layers (models/model_spec.h) on the script side: reading a
// `model.layers` list from a script and pushing one back to Lua. Their rules
// are models::layer_problem's, their text forms engine/config/values.h's;
// the models room builds the network from the same list (models/torso.h).
//
// In a script a layer list is a Lua list whose elements are
//   - tables {kind = "conv2d", out = 32, kernel = 8, stride = 4, padding = 0},
//     what the helpers ms.nn.linear(64), ms.nn.conv2d(32, 8, 4), ... build
//     (scripts/lua/moonseed/init.lua) and what to_lua writes, or
//   - strings for the layers without parameters: "relu", "flatten", ...
// Each kind takes exactly its fields (models::LayerSpec::fields_of): linear, lstm and
// impala_block take `out`; conv2d takes out, kernel, stride (default 1) and
// padding (default 0); maxpool2d takes kernel, stride (default = kernel) and
// padding; flatten, relu, tanh and elu take none. An lstm, the recurrent
// core, may only end the list.
//
// Failures are returned as values; nothing throws for a bad script.
// Thread-safety: the functions touch only their arguments.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <lua.hpp>

#include "engine/config/experiment_config.h"
#include "envs/spec.h"
#include "models/model_spec.h"
#include "scripts/api/lua_dsl_list.h"

namespace moonseed::scripts {

// `layers` is set when the value is a well-formed list; else the fault says what is wrong and where.
struct LayerListRead : DslListFault {
  std::optional<models::LayerList> layers;
};

// Reads the list at `index` for the field `path`. Leaves the stack as it was.
LayerListRead read_layer_list(lua_State* L, int index, const std::string& path);

// Pushes the list as read_layer_list accepts it.
void push_layer_list(lua_State* L, const models::LayerList& layers);

}  // namespace moonseed::scripts
