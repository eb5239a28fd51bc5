#include "scripts/config_layers.h"

#include <algorithm>
#include <cmath>

#include "engine/metrics_log.h"
#include "scripts/config_values.h"
#include "scripts/lua_api.h"
#include "scripts/lua_arrays.h"

namespace moonseed::scripts {
namespace {

constexpr int64_t kMaxWidth = 65536;  // out
constexpr int64_t kMaxWindow = 256;   // kernel, stride, padding

bool takes_out(const std::string& kind) {
  return kind == "linear" || kind == "lstm" || kind == "impala_block" || kind == "conv2d";
}
bool takes_window(const std::string& kind) { return kind == "conv2d" || kind == "maxpool2d"; }

// The value of one of a layer's fields by name.
int64_t field_value(const engine::LayerConfig& l, const std::string& field) {
  return field == "out" ? l.out : field == "kernel" ? l.kernel : field == "stride" ? l.stride : l.padding;
}

// The fields `kind` takes, in the order they are written.
std::vector<std::string> fields_of(const std::string& kind) {
  std::vector<std::string> fields;
  if (takes_out(kind)) fields.push_back("out");
  if (takes_window(kind)) fields.insert(fields.end(), {"kernel", "stride", "padding"});
  return fields;
}

std::string in_range(const char* what, int64_t value, int64_t min, int64_t max) {
  if (value >= min && value <= max) return "";
  return std::string("needs ") + what + " in [" + std::to_string(min) + ", " + std::to_string(max) +
         "], got " + std::to_string(value);
}

std::string layer_problem(const engine::LayerConfig& l) {
  const std::vector<std::string>& kinds = declared_layer_kinds();
  if (std::find(kinds.begin(), kinds.end(), l.kind) == kinds.end()) {
    const std::string close = closest_name(l.kind, kinds);
    std::string known;
    for (const std::string& k : kinds) known += (known.empty() ? "" : ", ") + k;
    return "unknown layer kind " + lua_quote(l.kind) +
           (close.empty() ? "" : "; did you mean " + lua_quote(close) + "?") + " (known: " + known + ")";
  }
  std::string problem;
  if (takes_out(l.kind)) {
    problem = in_range("out", l.out, 1, kMaxWidth);
  } else if (l.out != 0) {
    problem = "takes no out";
  }
  if (problem.empty() && takes_window(l.kind)) {
    problem = in_range("kernel", l.kernel, 1, kMaxWindow);
    if (problem.empty()) problem = in_range("stride", l.stride, 1, kMaxWindow);
    if (problem.empty()) problem = in_range("padding", l.padding, 0, kMaxWindow);
  } else if (problem.empty() && (l.kernel != 0 || l.stride != 1 || l.padding != 0)) {
    problem = "takes no kernel, stride or padding";
  }
  return problem;
}

int absolute(lua_State* L, int index) {
  return index < 0 && index > LUA_REGISTRYINDEX ? lua_gettop(L) + index + 1 : index;
}

// Reads element `k` (at the top of the stack) into `out`; "" or the problem,
// with *field set to the part at fault.
std::string read_element(lua_State* L, const std::string& name, engine::LayerConfig* out, std::string* field) {
  *field = name;
  const int type = lua_type(L, -1);
  if (type == LUA_TSTRING) {
    out->kind = lua_tostring(L, -1);
    if (!fields_of(out->kind).empty()) {
      return "a " + out->kind + " layer has parameters: write it as a table, e.g. ms.nn." + out->kind + "(...)";
    }
    return layer_problem(*out);
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
  const std::vector<std::string>& kinds = declared_layer_kinds();
  if (std::find(kinds.begin(), kinds.end(), out->kind) == kinds.end()) return layer_problem(*out);
  const std::vector<std::string> allowed = fields_of(out->kind);
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
        const std::string close = known ? "" : closest_name(key, allowed);
        std::string takes;
        for (const std::string& f : allowed) takes += (takes.empty() ? "" : ", ") + f;
        problem = (known ? "a " + out->kind + " layer takes no " + key
                         : "unknown layer field " + lua_quote(key) +
                               (close.empty() ? "" : "; did you mean " + lua_quote(close) + "?")) +
                  " (" + out->kind + " takes " + (takes.empty() ? "no fields" : takes) + ")";
      } else if (lua_type(L, -1) != LUA_TNUMBER || lua_tonumber(L, -1) != std::floor(lua_tonumber(L, -1)) ||
                 std::fabs(lua_tonumber(L, -1)) > 1e9) {
        problem = "expected an integer, got " + std::string(lua_typename(L, lua_type(L, -1))) +
                  (lua_type(L, -1) == LUA_TNUMBER ? " " + format_number(lua_tonumber(L, -1)) : "");
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
  return layer_problem(*out);
}

}  // namespace

const std::vector<std::string>& declared_layer_kinds() {
  static const std::vector<std::string> kinds = {"linear", "conv2d", "maxpool2d", "impala_block", "lstm",
                                                 "flatten", "relu", "tanh", "elu"};
  return kinds;
}

std::string layer_list_problem(const LayerList& layers) {
  for (size_t i = 0; i < layers.size(); ++i) {
    std::string problem = layer_problem(layers[i]);
    if (problem.empty() && layers[i].kind == "lstm" && i + 1 != layers.size()) {
      problem = "an lstm must be the last layer (the heads read its output)";
    }
    if (!problem.empty()) {
      return "element " + std::to_string(i + 1) + " (" + layers[i].kind + "): " + problem;
    }
  }
  return "";
}

LayerListRead read_layer_list(lua_State* L, int index, const std::string& path) {
  LayerListRead read;
  read.field = path;
  index = absolute(L, index);
  if (lua_type(L, index) != LUA_TTABLE || !is_sequence(L, index)) {
    read.problem = "expected a list of layers like {ms.nn.linear(64), ms.nn.relu()}, got " +
                   std::string(lua_type(L, index) == LUA_TTABLE ? "a table with named or missing entries"
                                                               : lua_typename(L, lua_type(L, index)));
    return read;
  }
  LayerList layers;
  const size_t n = lua_objlen(L, index);
  for (size_t k = 1; k <= n; ++k) {
    lua_rawgeti(L, index, static_cast<int>(k));
    engine::LayerConfig layer;
    const std::string name = path + "[" + std::to_string(k) + "]";
    std::string problem = read_element(L, name, &layer, &read.field);
    if (problem.empty() && layer.kind == "lstm" && k != n) {
      problem = "an lstm must be the last layer (the heads read its output)";
    }
    if (!problem.empty()) {
      if (std::optional<DslOrigin> origin = dsl_origin(L, -1)) {
        read.file = origin->file;
        read.line = origin->line;
      }
      lua_pop(L, 1);
      read.problem = problem;
      return read;
    }
    lua_pop(L, 1);
    layers.push_back(layer);
  }
  read.layers = std::move(layers);
  return read;
}

std::string layer_list_lua(const LayerList& layers) {
  std::string out = "{";
  for (size_t i = 0; i < layers.size(); ++i) {
    const engine::LayerConfig& l = layers[i];
    out += i ? ", " : "";
    const std::vector<std::string> fields = fields_of(l.kind);
    if (fields.empty()) {
      out += lua_quote(l.kind);
      continue;
    }
    out += "{kind = " + lua_quote(l.kind);
    for (const std::string& f : fields) {
      out += ", " + f + " = " + std::to_string(field_value(l, f));
    }
    out += "}";
  }
  return out + "}";
}

std::string layer_list_json(const LayerList& layers) {
  std::string out = "[";
  for (size_t i = 0; i < layers.size(); ++i) {
    const engine::LayerConfig& l = layers[i];
    out += std::string(i ? ", " : "") + "{\"kind\": " + engine::json_quote(l.kind);
    for (const std::string& f : fields_of(l.kind)) {
      out += ", \"" + f + "\": " + std::to_string(field_value(l, f));
    }
    out += "}";
  }
  return out + "]";
}

void push_layer_list(lua_State* L, const LayerList& layers) {
  lua_createtable(L, static_cast<int>(layers.size()), 0);
  for (size_t i = 0; i < layers.size(); ++i) {
    const engine::LayerConfig& l = layers[i];
    lua_createtable(L, 0, 5);
    lua_pushlstring(L, l.kind.data(), l.kind.size());
    lua_setfield(L, -2, "kind");
    for (const std::string& f : fields_of(l.kind)) {
      lua_pushnumber(L, static_cast<lua_Number>(field_value(l, f)));
      lua_setfield(L, -2, f.c_str());
    }
    lua_rawseti(L, -2, static_cast<int>(i + 1));
  }
}

}  // namespace moonseed::scripts
