// `moonseed script FILE.lua [ARGS...]`: runs a user's own Lua script with the
// moonseed API, e.g. to try an environment or compute V-trace targets by hand.
//
// The sandbox is off (the user's own script may read and write files); the
// search path is the usual one (lua_state.h); global `arg` holds the script
// path at arg[0] and ARGS at arg[1..n], which the chunk also gets as `...`.
// An error is printed to stderr as "moonseed script: file:line: message"
// followed by a traceback.
//
// Thread-safety: each call uses its own Lua state.
#pragma once

#include <string>
#include <vector>

namespace moonseed::scripts {

// Returns the process exit code: 0 on success, 1 when the script failed.
int run_script_file(const std::string& path, const std::vector<std::string>& args);

}  // namespace moonseed::scripts
