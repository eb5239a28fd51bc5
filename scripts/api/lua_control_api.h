// The native side of driving runs from Lua (module `moonseed.control_core`,
// used by scripts/lua/moonseed/run.lua, which is what users call: ms.attach,
// ms.start). Opened in the user's own states only (`moonseed script`, `repl`,
// `attach`, `ctl`), never in the sandbox that loads experiment scripts.
//
//   core.connect(socket_path)         -> Control (userdata); errors when no run listens
//     control:request(line [, timeout_s = 60]) -> reply line (JSON text)
//     control:close()
//   core.spawn(argv, log_path)        -> pid: starts argv[1] with argv[2..] in its own
//                                        session (it outlives the console), stdout and
//                                        stderr appended to log_path
//   core.status(pid)                  -> "running" | "exited", code (reaps the child)
//   core.binary()                     -> path of the running moonseed binary
//   core.sleep(seconds)
//   core.private_dir(prefix)          -> a new empty directory, mode 0700, under $TMPDIR
//                                        (else /tmp) named PREFIX-XXXXXX: unique, so two
//                                        consoles never share one; errors naming why not
//
// Thread-safety: one Lua state per thread.
#pragma once

#include <lua.hpp>

namespace moonseed::scripts {

// Registers `moonseed.control_core` in package.preload.
void open_control_api(lua_State* L);

}  // namespace moonseed::scripts
