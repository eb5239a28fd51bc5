// `moonseed attach RUN_DIR` and `moonseed ctl RUN_DIR ...`: the console and
// the one-shot client of a running learner's control socket
// (cli/engine/run_control.h lists the commands).
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <stdexcept>
#include <string>

#include "cli/common/commands.h"
#include "cli/console/line_editor.h"
#include "cli/console/lua_repl.h"
#include "scripts/state/lua_state.h"

namespace moonseed::cli {
namespace {

const char* kAttachUsage =
    "usage: moonseed attach RUN_DIR\n"
    "\n"
    "A Lua console connected to a running `moonseed run`: `run` is the run\n"
    "(run:status(), run:get(\"optimizer.lr\"), run:set(\"optimizer.lr\", 3e-4),\n"
    "run:reload(), run:pause(), run:resume(), run:checkpoint(), run:evaluate(10),\n"
    "run:metrics(5), run:wait(), run:stop()). `set` goes through the same\n"
    "validation as a hot reload: restart-only fields, and fields of the other\n"
    "algorithm (r2d2.* on a V-trace run, vtrace.* on an R2D2 run), are refused.\n"
    "It takes Lua values: run:set(\"optimizer.lr\", ms.linear(1e-3, 1e-4, 1e6)).\n"
    "Leaving the console leaves the run going. See docs/repl.md.\n";

const char* kCtlUsage =
    "usage: moonseed ctl RUN_DIR COMMAND [ARGS...]\n"
    "       moonseed ctl RUN_DIR -e 'LUA'\n"
    "\n"
    "One request to a running `moonseed run`, for shell scripts. COMMAND is one of\n"
    "  status | get [FIELD] | set FIELD VALUE | reload | pause | resume |\n"
    "  checkpoint | evaluate [N] [greedy|sample] | stop\n"
    "and the reply's result is printed as JSON. VALUE of `set` is plain text as\n"
    "on the command line (3e-4, true, adam, 64,64) or the Lua expression a script\n"
    "would hold, evaluated in the script sandbox under its limits:\n"
    "  moonseed ctl RUN_DIR set optimizer.lr 'ms.linear(1e-3, 1e-4, 1e6)'\n"
    "Restart-only fields and fields of the other algorithm are refused.\n"
    "With -e, LUA runs with `run` bound as in `moonseed attach`, and what it\n"
    "evaluates to or returns is printed as the console prints it\n"
    "(-e 'return run:status().frames').\n"
    "Exit code 0 on success, 1 when the run refuses (the reason goes to stderr)\n"
    "or cannot be reached.\n";

const char* kAttachGuide =
    "`run` is the attached run:\n"
    "  run:status()                 counters, return_mean, config version, paused\n"
    "  run:get(\"optimizer.lr\")      a field (run:get() for all)\n"
    "  run:set(\"optimizer.lr\", 3e-4)  applied as a hot reload, or refused with the reason;\n"
    "                               a schedule too: ms.linear(1e-3, 1e-4, 1e6)\n"
    "  run:reload()  run:pause()  run:resume()  run:checkpoint()  run:stop()\n"
    "  run:evaluate(10)             10 greedy episodes with the newest weights\n"
    "  run:metrics(5)               the last rows of metrics.jsonl\n"
    "  run:wait(nil, 5)             until the run ends, printing status every 5 s\n"
    "Also ms.start(script, overrides) and ms.attach(dir) for other runs.\n"
    "Ctrl-D or exit() leaves the console; the run goes on.\n";

// A user's Lua state with the engine's API and run control, `ms` set, and
// `run` attached to `run_dir`. Throws when the run cannot be reached.
void open_console(scripts::LuaState& lua, const std::string& run_dir) {
  lua_State* L = lua.get();
  open_console_api(L);
  lua_getglobal(L, "ms");
  lua_getfield(L, -1, "attach");
  lua_pushlstring(L, run_dir.data(), run_dir.size());
  if (lua_pcall(L, 1, 1, 0) != 0) throw std::runtime_error(lua_tostring(L, -1));
  lua_setglobal(L, "run");
  lua_pop(L, 1);
}

}  // namespace

int attach_command(const Args& args) {
  if (args.empty() || wants_help(args)) {
    std::fputs(kAttachUsage, args.empty() ? stderr : stdout);
    return args.empty() ? 2 : 0;
  }
  if (args.size() != 1) throw std::invalid_argument("expected one run directory (see moonseed attach --help)");
  const std::string run_dir = strip_slash(args[0]);
  scripts::LuaState lua(scripts::Sandbox::kOff);
  lua.set_search_path(scripts::default_search_path(""));
  open_console(lua, run_dir);
  lua_State* L = lua.get();

  LineEditor editor(STDIN_FILENO, STDOUT_FILENO);
  if (editor.interactive()) editor.history().attach_file(default_history_path());
  ReplOptions options;
  std::string name = run_dir.substr(run_dir.find_last_of('/') + 1);
  options.prompt = name + "> ";
  options.banner = "Attached to " + run_dir + ". help for the run's commands; Ctrl-D leaves it running.";
  options.help = kAttachGuide;
  LuaRepl repl(L, editor, options);
  return repl.run();
}

int ctl_command(const Args& args) {
  if (args.empty() || wants_help(args)) {
    std::fputs(kCtlUsage, args.empty() ? stderr : stdout);
    return args.empty() ? 2 : 0;
  }
  if (args.size() < 2) throw std::invalid_argument("expected RUN_DIR and a command (see moonseed ctl --help)");
  const std::string run_dir = strip_slash(args[0]);
  if (args[1] == "-e") {
    if (args.size() != 3) throw std::invalid_argument("-e takes one Lua chunk (quote it)");
    scripts::LuaState lua(scripts::Sandbox::kOff);
    lua.set_search_path(scripts::default_search_path(""));
    open_console(lua, run_dir);
    LineEditor editor(-1, STDOUT_FILENO);  // no input: only evaluate()
    LuaRepl repl(lua.get(), editor, ReplOptions{});
    const EvalStatus status = repl.evaluate(args[2], /*input_ended=*/true);
    if (status == EvalStatus::kExit) return repl.exit_code();
    return status == EvalStatus::kDone ? 0 : 1;
  }
  return ctl_request(run_dir, Args(args.begin() + 1, args.end()));
}

}  // namespace moonseed::cli
