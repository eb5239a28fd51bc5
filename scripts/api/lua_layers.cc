#include "scripts/api/lua_layers.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "base/text.h"
#include "engine/config/values.h"
#include "models/model_spec.h"
#include "scripts/api/lua_dsl_list.h"

namespace moonseed::scripts {
namespace {

// Reads element `k` (at the top of the stack) into `out`; "" or the problem,
// with *field set to the part at fault.
std::string read_element(lua_State* L, const std::string& name, models::LayerSpec* out, std::string* field) {
  *field = name;
  const int type = lua_type(L, -1);
  if (type == LUA_TSTRING) {
    out->kind = lua_tostring(L, -1);
    if (!models::LayerSpec::fields_of(out->kind).empty()) {
      return "a " + out->kind + " layer has parameters: write it as a table, e.g. ms.nn." + out->kind + "(...)";
    }
    return models::layer_problem(*out);
  }
  if (type != LUA_TTABLE) {
    return std::string("expected a layer (a table such as ms.nn.linear(64), or a name such as \"relu\"), got ") +
           lua_typename(L, type);
  }
  const int table = lua_gettop(L);
  lua_getfield(L, table, "kind");
  if (lua_type(L, -1) != LUA_TSTRING) {
    const std::string got = lua_typename(L, lua_type(L, -1));
    lua_pop(L, 1);
    *field = name + ".kind";
    return "expected the layer's kind as a string, got " + got;
  }
  out->kind = lua_tostring(L, -1);
  lua_pop(L, 1);
  const std::vector<std::string>& kinds = models::declared_layer_kinds();
  if (std::find(kinds.begin(), kinds.end(), out->kind) == kinds.end()) return models::layer_problem(*out);
  const std::vector<std::string> allowed = models::LayerSpec::fields_of(out->kind);
  bool stride_given = false;
  std::string problem;
  lua_pushnil(L);
  while (lua_next(L, table) != 0) {
    const std::string key = lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : "";
    if (problem.empty() && key != "kind") {
      *field = name + (key.empty() ? "" : "." + key);
      if (key.empty()) {
        problem = "unexpected positional entry; layer tables take named fields (kind, out, kernel, stride, padding)";
      } else if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
        std::vector<std::string> all = {"out", "kernel", "stride", "padding"};
        const bool known = std::find(all.begin(), all.end(), key) != all.end();
        const std::string close = known ? "" : base::closest_name(key, allowed);
        const std::string takes = base::join(allowed);
        problem = (known ? "a " + out->kind + " layer takes no " + key
                         : "unknown layer field " + base::lua_quote(key) +
                               (close.empty() ? "" : "; did you mean " + base::lua_quote(close) + "?")) +
                  " (" + out->kind + " takes " + (takes.empty() ? "no fields" : takes) + ")";
      } else if (lua_type(L, -1) != LUA_TNUMBER || lua_tonumber(L, -1) != std::floor(lua_tonumber(L, -1)) ||
                 std::fabs(lua_tonumber(L, -1)) > 1e9) {
        problem = "expected an integer, got " + std::string(lua_typename(L, lua_type(L, -1))) +
                  (lua_type(L, -1) == LUA_TNUMBER ? " " + engine::format_number(lua_tonumber(L, -1)) : "");
      } else {
        const auto v = static_cast<int64_t>(lua_tonumber(L, -1));
        if (key == "out") out->out = v;
        if (key == "kernel") out->kernel = v;
        if (key == "stride") out->stride = v, stride_given = true;
        if (key == "padding") out->padding = v;
      }
    }
    lua_pop(L, 1);
  }
  if (!problem.empty()) return problem;
  // A pooling window steps by its own size unless told otherwise, as in Torch.
  if (out->kind == "maxpool2d" && !stride_given) out->stride = out->kernel;
  *field = name;
  return models::layer_problem(*out);
}

}  // namespace

LayerListRead read_layer_list(lua_State* L, int index, const std::string& path) {
  LayerListRead read;
  models::LayerList layers;
  const auto element = [&](size_t k, size_t n, const std::string& name) {
    models::LayerSpec layer;
    std::string problem = read_element(L, name, &layer, &read.field);
    if (problem.empty() && layer.kind == "lstm" && k != n) {
      problem = "an lstm must be the last layer (the heads read its output)";
    }
    if (problem.empty()) layers.push_back(layer);
    return problem;
  };
  if (read_dsl_list(L, index, path, "expected a list of layers like {ms.nn.linear(64), ms.nn.relu()}",
                    std::numeric_limits<size_t>::max(), element, &read)) {
    read.layers = std::move(layers);
  }
  return read;
}

void push_layer_list(lua_State* L, const models::LayerList& layers) {
  lua_createtable(L, static_cast<int>(layers.size()), 0);
  for (size_t i = 0; i < layers.size(); ++i) {
    const models::LayerSpec& l = layers[i];
    lua_createtable(L, 0, 5);
    lua_pushlstring(L, l.kind.data(), l.kind.size());
    lua_setfield(L, -2, "kind");
    for (const std::string& f : models::LayerSpec::fields_of(l.kind)) {
      lua_pushnumber(L, static_cast<lua_Number>(l.field(f)));
      lua_setfield(L, -2, f.c_str());
    }
    lua_rawseti(L, -2, static_cast<int>(i + 1));
  }
}

}  // namespace moonseed::scripts
