// Provenance of a loaded experiment: every Lua file its config came from (the
// script, recipes, modules it required, the engine's embedded library files),
// with the exact bytes and their SHA-256, which a run directory keeps so the
// run can be reproduced from it alone; and the manifest `sha256sum -c` checks.
//
// Pure functions; thread-safe (sources_of reads a state its caller owns).
#pragma once

#include <string>
#include <vector>

#include "scripts/state/lua_state.h"

namespace moonseed::scripts {

struct ScriptSource {
  std::string path;    // as opened; embedded library files as "[moonseed]/moonseed/x.lua"
  std::string sha256;  // lowercase hex of the exact bytes
  std::string text;
  bool embedded = false;
};

// Every file `lua` compiled, each path once, in load order, with its digest.
std::vector<ScriptSource> sources_of(const LuaState& lua);

// "SHA256  PATH\n" per source, the format `sha256sum -c` reads. Paths are
// written as given: to check copies, pass sources whose paths name the copies
// (relative to the directory sha256sum runs in). A path holding a newline or
// a backslash is escaped as sha256sum does (the line starts with '\').
std::string sources_manifest(const std::vector<ScriptSource>& sources);

}  // namespace moonseed::scripts
