// Reading a list of tables a script declares with the moonseed DSL (ms.nn layers in
// model.layers, ms.wrap wrappers in env.wrappers): the list's shape and the place of the element
// at fault, shared by scripts/api/lua_layers.cc and scripts/api/lua_wrappers.cc.
//
// Failures are returned as values; nothing throws for a bad script.
// Thread-safety: the functions touch only their arguments.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>

#include <lua.hpp>

namespace moonseed::scripts {

// What is wrong with a list and where: the problem, the part at fault ("model.layers[3].kernel")
// and, when a DSL helper built the element at fault, its own file and line ("" and 0 otherwise).
struct DslListFault {
  std::string problem;
  std::string field;
  std::string file;
  int line = 0;
};

// Reads the list at `index` for the field `path`: it must be a Lua sequence of at most
// `max_elements` entries (else `expected`, followed by what the value is). Each element k
// (1-based, of n) is pushed and handed to read_element(k, n, "path[k]"), which returns "" or a
// problem and may set fault->field. Returns false at the first problem, with *fault filled in.
// Leaves the stack as it was.
bool read_dsl_list(lua_State* L, int index, const std::string& path, const std::string& expected,
                   size_t max_elements,
                   const std::function<std::string(size_t k, size_t n, const std::string& name)>& read_element,
                   DslListFault* fault);

// Where the table at `index` was built by a DSL helper of the moonseed
// library (ms.origin): its file (the chunk name without '@') and line.
// nullopt for a table no helper built, or when the library is not loaded.
struct DslOrigin {
  std::string file;
  int line = 0;
};
std::optional<DslOrigin> dsl_origin(lua_State* L, int index);

}  // namespace moonseed::scripts
