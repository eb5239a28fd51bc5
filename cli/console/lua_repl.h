// LuaRepl: a read-eval-print loop over a Lua state someone else owns and set
// up. `moonseed repl` gives it a state with the engine's Lua API; `moonseed
// attach` can give it the same state plus its own functions and a different
// prompt, banner and help (ReplOptions).
//
//   - Each input is first compiled as `return <input>`: an expression's values
//     are printed, tab-separated (strings raw, anything else through
//     pretty_value); a statement prints nothing unless it ends in `return`,
//     whose values print the same way (`moonseed ctl RUN -e 'return 1'`).
//   - An input whose compile error ends at `<eof>` is incomplete: the loop
//     shows the continuation prompt and appends the next line; Ctrl-C
//     abandons it.
//   - Runtime errors print Lua's message and a short traceback to `err`; the
//     loop goes on. Ctrl-C while Lua code runs raises "interrupted" in it at
//     the next Lua call or instruction count (a loop compiled by the JIT may
//     not see it; a second Ctrl-C then ends the process as usual).
//   - Globals defined in the state: help() prints options.help; exit([code])
//     and quit([code]) end the loop after the current input.
//   - Tab completion (complete_lua): globals and keywords, fields of tables
//     reached by a dotted path, methods (after ':') through metatables'
//     __index tables, e.g. userdata such as moonseed's Env. Completing never
//     calls Lua functions or metamethods.
//
// Ownership: L and the editor are borrowed and must outlive the LuaRepl; it
// installs its completer in the editor and removes it when destroyed.
// Thread-safety: a LuaRepl and its state are used by one thread.
#pragma once

#include <cstddef>
#include <iostream>
#include <string>

#include <lua.hpp>

#include "cli/console/line_editor.h"

namespace moonseed::cli {

struct ReplOptions {
  std::string prompt = "moonseed> ";
  std::string continuation_prompt = "..> ";
  std::string banner;  // printed once when the console is interactive; "" for none
  std::string help;    // printed by help()
};

// Bounds of pretty_value: tables deeper than max_depth print as {...}, and a
// table shows at most max_items entries then "... (N more)".
struct PrettyLimits {
  int max_depth = 4;
  size_t max_items = 64;
  size_t line_width = 78;  // a table that fits in this many columns stays on one line
};

// The value at stack index `index` as the console shows it. Tables print with
// the sequence part first, then the other keys sorted (numbers, strings,
// booleans, others); nested tables are indented two spaces per level; a table
// already being printed further up prints as <cycle>; a value with a
// __tostring metamethod prints through it. Strings are quoted and escaped.
// Leaves the stack as it was.
std::string pretty_value(lua_State* L, int index, const PrettyLimits& limits = {});

// Completion candidates for the name before `cursor` (see above).
Completion complete_lua(lua_State* L, const std::string& line, size_t cursor);

enum class EvalStatus {
  kDone,        // ran (and printed what it returned)
  kIncomplete,  // needs more lines
  kError,       // a syntax or runtime error was printed
  kExit,        // exit() or quit() was called
};

// Opens what a user's console has: the engine's Lua API, run control
// (ms.start, ms.attach) and the global `ms` = require "moonseed". Throws
// std::runtime_error when the library fails to load.
void open_console_api(lua_State* L);

class LuaRepl {
 public:
  LuaRepl(lua_State* L, LineEditor& editor, ReplOptions options, std::ostream& out = std::cout,
          std::ostream& err = std::cerr);
  ~LuaRepl();
  LuaRepl(const LuaRepl&) = delete;
  LuaRepl& operator=(const LuaRepl&) = delete;

  // Reads, evaluates and prints until end of input or exit(). Returns the
  // process exit code: exit(code)'s code; else 1 when the input was not a
  // terminal and some input failed (so piped scripts can be checked); else 0.
  int run();

  // Evaluates `input` (lines joined by '\n'). With input_ended, an incomplete
  // input is reported as the syntax error it is.
  EvalStatus evaluate(const std::string& input, bool input_ended = false);

  // Runs a Lua file in the console's state (e.g. files given on the command
  // line); errors are printed like the console's own.
  EvalStatus run_file(const std::string& path);

  bool exit_requested() const { return exit_requested_; }
  int exit_code() const { return exit_code_; }

 private:
  static int lua_help(lua_State* L);
  static int lua_exit(lua_State* L);
  // Calls the function on top of the stack; prints its results when `print`.
  // `counted`: the function is an expression chunk `return (...)(input)`; it
  // gets count_values as `...`, whose first result is the number of values.
  EvalStatus call(bool print, bool counted);
  void flush();

  lua_State* L_;
  LineEditor& editor_;
  ReplOptions options_;
  std::ostream& out_;
  std::ostream& err_;
  bool exit_requested_ = false;
  int exit_code_ = 0;
};

}  // namespace moonseed::cli
