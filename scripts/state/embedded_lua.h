// The engine's own Lua library (scripts/lua/**/*.lua), compiled into the
// binary as string literals by scripts/state/embed_lua.cmake, so `require "moonseed"`
// needs no path lookup wherever the binary runs from.
//
// Immutable static data; thread-safe.
#pragma once

#include <cstddef>

namespace moonseed::scripts {

struct EmbeddedLuaModule {
  const char* name;        // module name: "moonseed" for moonseed/init.lua, "moonseed.x" for moonseed/x.lua
  const char* chunk_name;  // "@[moonseed]/moonseed/init.lua": errors point at the library file
  const char* source;
  size_t size;
};

// nullptr when no embedded module has that name.
const EmbeddedLuaModule* find_embedded_lua_module(const char* name);
// The module a path names, as the engine shows it: its chunk name without the
// "@" ("[moonseed]/moonseed/init.lua"); nullptr when none.
const EmbeddedLuaModule* find_embedded_lua_file(const char* path);

}  // namespace moonseed::scripts
