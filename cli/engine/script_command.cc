#include <cstdio>
#include <iostream>

#include "cli/common/commands.h"
#include "scripts/api/script_runner.h"

namespace moonseed::cli {

namespace {
const char* kHelp =
    "usage: moonseed script FILE.lua [ARGS...]\n"
    "\n"
    "Runs a Lua file headless in LuaJIT with the engine's Lua API loaded\n"
    "(`local ms = require \"moonseed\"`): make and step environments, compute\n"
    "V-trace targets, load and validate experiments. ARGS are in the global\n"
    "`arg` table. Errors are printed with file:line; the exit code is then 1.\n";
}  // namespace

int script_command(const Args& args) {
  if (args.empty() || args[0] == "-h" || args[0] == "--help") {
    std::fputs(kHelp, args.empty() ? stderr : stdout);
    return args.empty() ? 2 : 0;
  }
  return scripts::run_script_file(args[0], Args(args.begin() + 1, args.end()));
}

}  // namespace moonseed::cli
