#include "cli/console/lua_repl.h"

#include <signal.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "scripts/api/lua_api.h"
#include "scripts/api/lua_control_api.h"
#include "scripts/state/lua_state.h"

namespace moonseed::cli {
namespace {

// The error value exit() raises, so that the rest of the input does not run;
// compared by address.
const char kExitSentinel = 0;

// --- evaluation ---------------------------------------------------------------

// An input is incomplete when the compiler ran out of text: Lua's message
// then ends with "near '<eof>'" (or "<eof>" for long strings and comments).
// The error message on top of the stack ("" for a non-string, which only an
// out-of-memory error can leave here).
std::string top_message(lua_State* L) {
  const char* s = lua_tostring(L, -1);
  return s == nullptr ? std::string() : std::string(s);
}

bool is_incomplete(const std::string& message) {
  const std::string tail = "<eof>";
  size_t end = message.size();
  if (end > 0 && message[end - 1] == '\'') --end;
  return end >= tail.size() && message.compare(end - tail.size(), tail.size(), tail) == 0;
}

// Returns its arguments preceded by their count, so that nils at the end of
// an expression's values are kept.
int count_values(lua_State* L) {
  const int n = lua_gettop(L);
  if (!lua_checkstack(L, 1)) return luaL_error(L, "too many values to print");
  lua_pushinteger(L, n);
  lua_insert(L, 1);
  return n + 1;
}

// Error handler of console calls: exit()'s sentinel passes unchanged; a
// plain error (moonseed.run's plain_error: a table with plain = true, such as
// "the run has ended") becomes its message alone; any other error becomes its
// message and a traceback.
int message_handler(lua_State* L) {
  if (lua_touserdata(L, 1) == &kExitSentinel) return 1;
  if (lua_istable(L, 1)) {
    lua_getfield(L, 1, "plain");
    const bool plain = lua_toboolean(L, -1) != 0;
    lua_pop(L, 1);
    if (plain && luaL_callmeta(L, 1, "__tostring") && lua_type(L, -1) == LUA_TSTRING) return 1;
  }
  return scripts::traceback_handler(L);
}

// `help`, `exit` or `quit` alone on a line, naming the console's own function.
bool is_bare_command(lua_State* L, const std::string& input, lua_CFunction help, lua_CFunction exit) {
  const size_t first = input.find_first_not_of(" \t");
  if (first == std::string::npos) return false;
  const std::string word = input.substr(first, input.find_last_not_of(" \t") + 1 - first);
  if (word != "help" && word != "exit" && word != "quit") return false;
  lua_getglobal(L, word.c_str());
  const lua_CFunction f = lua_tocfunction(L, -1);
  lua_pop(L, 1);
  return f != nullptr && f == (word == "help" ? help : exit);
}

// The traceback without the frames below the console's input (the C call
// that started it), which tell the user nothing.
std::string short_traceback(const std::string& text) {
  std::string out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(pos, end - pos);
    if (line.rfind("\t[C]: at 0x", 0) != 0 && line != "\t[C]: ?") out += (out.empty() ? "" : "\n") + line;
    pos = end + 1;
  }
  return out;
}

// Ctrl-C while Lua runs: the handler can only set a hook; the hook raises the
// error from inside the running code. One console evaluates at a time.
lua_State* g_interrupt_target = nullptr;

void interrupt_hook(lua_State* L, lua_Debug*) {
  lua_sethook(L, nullptr, 0, 0);
  luaL_error(L, "interrupted");
}

void on_interrupt(int) {
  signal(SIGINT, SIG_DFL);  // a second Ctrl-C ends the process
  if (g_interrupt_target != nullptr) {
    lua_sethook(g_interrupt_target, interrupt_hook, LUA_MASKCALL | LUA_MASKRET | LUA_MASKCOUNT, 1);
  }
}

class InterruptScope {
 public:
  explicit InterruptScope(lua_State* L) : L_(L) {
    g_interrupt_target = L;
    struct sigaction action {};
    action.sa_handler = on_interrupt;
    sigemptyset(&action.sa_mask);
    sigaction(SIGINT, &action, &previous_);
  }
  ~InterruptScope() {
    sigaction(SIGINT, &previous_, nullptr);
    if (lua_gethook(L_) == interrupt_hook) lua_sethook(L_, nullptr, 0, 0);
    g_interrupt_target = nullptr;
  }
  InterruptScope(const InterruptScope&) = delete;
  InterruptScope& operator=(const InterruptScope&) = delete;

 private:
  lua_State* L_;
  struct sigaction previous_ {};
};

}  // namespace

LuaRepl::LuaRepl(lua_State* L, LineEditor& editor, ReplOptions options, std::ostream& out, std::ostream& err)
    : L_(L), editor_(editor), options_(std::move(options)), out_(out), err_(err) {
  if (L == nullptr) throw std::invalid_argument("LuaRepl: the Lua state is null");
  const luaL_Reg functions[] = {{"help", lua_help}, {"exit", lua_exit}, {"quit", lua_exit}};
  for (const luaL_Reg& f : functions) {
    lua_pushlightuserdata(L_, this);
    lua_pushcclosure(L_, f.func, 1);
    lua_setglobal(L_, f.name);
  }
  editor_.set_completer([L](const std::string& line, size_t cursor) { return complete_lua(L, line, cursor); });
}

LuaRepl::~LuaRepl() { editor_.set_completer(nullptr); }

int LuaRepl::lua_help(lua_State* L) {
  auto* repl = static_cast<LuaRepl*>(lua_touserdata(L, lua_upvalueindex(1)));
  repl->out_ << repl->options_.help;
  if (!repl->options_.help.empty() && repl->options_.help.back() != '\n') repl->out_ << '\n';
  return 0;
}

int LuaRepl::lua_exit(lua_State* L) {
  auto* repl = static_cast<LuaRepl*>(lua_touserdata(L, lua_upvalueindex(1)));
  repl->exit_code_ = static_cast<int>(luaL_optinteger(L, 1, 0));
  repl->exit_requested_ = true;
  lua_pushlightuserdata(L, const_cast<char*>(&kExitSentinel));
  return lua_error(L);
}

EvalStatus LuaRepl::evaluate(const std::string& input, bool input_ended) {
  // Typed as a word, as in Python's console, they do what they say instead of printing "function: 0x...".
  if (is_bare_command(L_, input, lua_help, lua_exit)) return evaluate(input + "()", input_ended);
  const int top = lua_gettop(L_);
  const std::string as_expression = "return " + input;
  if (luaL_loadbuffer(L_, as_expression.data(), as_expression.size(), "=stdin") == 0) {
    // `return f()` would be a tail call, which drops the input's own frame
    // from error positions and tracebacks ("boom" instead of "stdin:1:
    // boom"). The values go through count_values, passed as the chunk's
    // `...`, instead. ('\n' ends a trailing comment. An input that uses
    // `...` itself, or a form the call cannot take such as "1;", runs as it is.)
    if (input.find("...") != std::string::npos) return call(true, false);
    const std::string counted = "return (...)(" + input + "\n)";
    if (luaL_loadbuffer(L_, counted.data(), counted.size(), "=stdin") == 0) {
      lua_remove(L_, -2);
      return call(true, true);
    }
    lua_pop(L_, 1);
    return call(true, false);
  }
  const bool expression_incomplete = is_incomplete(top_message(L_));
  lua_settop(L_, top);
  // A statement chunk prints what it returns (`return 1`, `x = 1 return x`), as Lua's own console does.
  if (luaL_loadbuffer(L_, input.data(), input.size(), "=stdin") == 0) return call(true, false);
  const std::string message = top_message(L_);
  lua_settop(L_, top);
  if (!input_ended && (expression_incomplete || is_incomplete(message))) return EvalStatus::kIncomplete;
  flush();
  err_ << message << std::endl;
  return EvalStatus::kError;
}

EvalStatus LuaRepl::run_file(const std::string& path) {
  if (luaL_loadfile(L_, path.c_str()) != 0) {
    flush();
    err_ << top_message(L_) << std::endl;
    lua_pop(L_, 1);
    return EvalStatus::kError;
  }
  return call(false, false);
}

EvalStatus LuaRepl::call(bool print, bool counted) {
  const int function = lua_gettop(L_);
  lua_pushcfunction(L_, message_handler);
  lua_insert(L_, function);
  if (counted) lua_pushcfunction(L_, count_values);
  int status = 0;
  {
    InterruptScope interrupt(L_);
    status = lua_pcall(L_, counted ? 1 : 0, LUA_MULTRET, function);
  }
  const int handler = function;
  if (status != 0) {
    const bool exiting = lua_touserdata(L_, -1) == &kExitSentinel || exit_requested_;
    if (!exiting) {
      const std::string message = top_message(L_);
      flush();
      err_ << short_traceback(message) << std::endl;
    }
    lua_settop(L_, handler - 1);
    return exiting ? EvalStatus::kExit : EvalStatus::kError;
  }
  const int first = handler + (counted ? 2 : 1);
  const int last = lua_gettop(L_);
  if (print && first <= last) {
    std::string line;
    for (int index = first; index <= last; ++index) {
      if (index > first) line += '\t';
      if (lua_type(L_, index) == LUA_TSTRING) {
        size_t length = 0;
        const char* s = lua_tolstring(L_, index, &length);
        line.append(s, length);
      } else {
        line += pretty_value(L_, index);
      }
    }
    std::fflush(stdout);  // Lua's print wrote there first
    out_ << line << '\n';
  }
  lua_settop(L_, handler - 1);
  return exit_requested_ ? EvalStatus::kExit : EvalStatus::kDone;
}

int LuaRepl::run() {
  if (editor_.interactive() && !options_.banner.empty()) out_ << options_.banner << '\n';
  std::string pending;
  bool failed = false;
  while (!exit_requested_) {
    flush();
    const ReadResult read = editor_.read_line(pending.empty() ? options_.prompt : options_.continuation_prompt);
    if (read.status == ReadStatus::kInterrupted) {
      pending.clear();
      continue;
    }
    if (read.status == ReadStatus::kEndOfInput) {
      if (!pending.empty()) failed = evaluate(pending, true) == EvalStatus::kError || failed;
      break;
    }
    const bool blank = read.line.find_first_not_of(" \t") == std::string::npos;
    if (editor_.interactive() && !blank) editor_.history().add(read.line);
    if (pending.empty() && blank) continue;
    pending = pending.empty() ? read.line : pending + "\n" + read.line;
    const EvalStatus status = evaluate(pending);
    if (status == EvalStatus::kIncomplete) continue;
    pending.clear();
    failed = failed || status == EvalStatus::kError;
  }
  flush();
  if (exit_requested_) return exit_code_;
  return !editor_.interactive() && failed ? 1 : 0;
}

void LuaRepl::flush() {
  out_.flush();
  std::fflush(stdout);
  std::fflush(stderr);
  err_.flush();
}

void open_console_api(lua_State* L) {
  scripts::open_moonseed_api(L);
  scripts::open_control_api(L);
  lua_getglobal(L, "require");
  lua_pushliteral(L, "moonseed");
  if (scripts::pcall_with_traceback(L, 1, 1) != 0) {
    const std::string message = lua_tostring(L, -1);
    lua_pop(L, 1);
    throw std::runtime_error("require \"moonseed\" failed: " + message);
  }
  lua_setglobal(L, "ms");
}

}  // namespace moonseed::cli
