// `moonseed repl [FILE.lua...]`: the LuaJIT console with the engine's Lua API.
#include <unistd.h>

#include <cstdio>
#include <stdexcept>
#include <string>

#include "cli/common/commands.h"
#include "cli/console/line_editor.h"
#include "cli/console/lua_repl.h"
#include "scripts/state/lua_state.h"

namespace moonseed::cli {

namespace {

const char* kUsage =
    "usage: moonseed repl [FILE.lua...]\n"
    "\n"
    "An interactive LuaJIT console with the engine's Lua API; `ms` is\n"
    "require \"moonseed\". FILEs run first, in order. Expressions print their\n"
    "values; Tab completes names; history is kept in ~/.moonseed_history\n"
    "($MOONSEED_HISTORY overrides, empty disables). Input that is not a\n"
    "terminal is read line by line without prompts (echo '1+1' | moonseed repl);\n"
    "the exit code is then 1 if any input failed. See docs/repl.md.\n";

const char* kGuide =
    "Type Lua. An expression prints its values; a statement prints nothing.\n"
    "  ms                               the moonseed module (require \"moonseed\")\n"
    "  ms.env.ids()                     built-in environments\n"
    "  e = ms.env.make(\"CartPole-v1\")   then e:reset(1), e:step(0), e:spec()\n"
    "  ms.load_experiment(\"x.lua\")      validate an experiment, see its resolved config\n"
    "Keys: Tab completes (twice lists), Up/Down history, Ctrl-A/E start/end,\n"
    "Ctrl-K/U/W kill, Ctrl-L clear, Ctrl-C abandons the line (or interrupts Lua code).\n"
    "An unfinished statement continues on a `..>` line. Leave with Ctrl-D or exit().\n"
    "More in docs/repl.md and docs/lua-api.md.\n";

// "LuaJIT 2.1.0-beta3" as the running library reports it.
std::string luajit_version(lua_State* L) {
  lua_getglobal(L, "jit");
  lua_getfield(L, -1, "version");
  const char* version = lua_tostring(L, -1);
  std::string text = version != nullptr ? version : LUAJIT_VERSION;
  lua_pop(L, 2);
  return text;
}

}  // namespace

int repl_command(const Args& args) {
  if (!args.empty() && (args[0] == "-h" || args[0] == "--help")) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  // The user's own console: no sandbox, like `moonseed script`.
  scripts::LuaState lua(scripts::Sandbox::kOff);
  lua.set_search_path(scripts::default_search_path(args.empty() ? std::string() : args.front()));
  lua_State* L = lua.get();
  open_console_api(L);

  LineEditor editor(STDIN_FILENO, STDOUT_FILENO);
  if (editor.interactive()) editor.history().attach_file(default_history_path());
  ReplOptions options;
  options.banner = "Moonseed console on " + luajit_version(L) +
                   ". help for a short guide; Ctrl-D or exit to leave.";
  options.help = kGuide;
  LuaRepl repl(L, editor, options);
  bool file_failed = false;
  for (const std::string& file : args) {
    const EvalStatus status = repl.run_file(file);
    if (status == EvalStatus::kExit) return repl.exit_code();
    file_failed = file_failed || status == EvalStatus::kError;
  }
  const int code = repl.run();
  return code == 0 && file_failed && !editor.interactive() && !repl.exit_requested() ? 1 : code;
}

}  // namespace moonseed::cli
