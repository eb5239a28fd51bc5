#include "cli/lua_repl.h"

#include <signal.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <set>
#include <stdexcept>
#include <vector>

#include "scripts/config_values.h"
#include "scripts/lua_api.h"
#include "scripts/lua_control_api.h"
#include "scripts/lua_state.h"

namespace moonseed::cli {
namespace {

// The error value exit() raises, so that the rest of the input does not run;
// compared by address.
const char kExitSentinel = 0;

const char* const kKeywords[] = {"and",   "break", "do",  "else", "elseif", "end",    "false",
                                  "for",   "function", "goto", "if", "in",  "local",  "nil",
                                  "not",   "or",    "repeat", "return", "then", "true", "until",
                                  "while"};

bool is_keyword(const std::string& word) {
  for (const char* k : kKeywords) {
    if (word == k) return true;
  }
  return false;
}

bool is_name_byte(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

bool is_identifier(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  return std::all_of(s.begin(), s.end(), is_name_byte) && !is_keyword(s);
}

// --- pretty printing --------------------------------------------------------


// tostring(value) through Lua, so that __tostring and LuaJIT's own formats
// (numbers, cdata) apply; an error in __tostring is shown, not raised.
std::string lua_tostring_of(lua_State* L, int index) {
  lua_getglobal(L, "tostring");
  lua_pushvalue(L, index);
  const bool ok = lua_pcall(L, 1, 1, 0) == 0;
  size_t length = 0;
  const char* s = lua_tolstring(L, -1, &length);
  std::string text = s == nullptr ? std::string("?") : std::string(s, length);
  lua_pop(L, 1);
  return ok ? text : "<tostring failed: " + text + ">";
}

class PrettyPrinter {
 public:
  PrettyPrinter(lua_State* L, const PrettyLimits& limits) : L_(L), limits_(limits) {}

  std::string value(int index, int depth, size_t indent) {
    switch (lua_type(L_, index)) {
      case LUA_TNIL: return "nil";
      case LUA_TBOOLEAN: return lua_toboolean(L_, index) ? "true" : "false";
      case LUA_TSTRING: {
        size_t length = 0;
        const char* s = lua_tolstring(L_, index, &length);
        return scripts::lua_quote(std::string(s, length));
      }
      case LUA_TTABLE: return table(index, depth, indent);
      default: return lua_tostring_of(L_, index);
    }
  }

 private:
  // Sort rank of a key: numbers, then strings, then booleans, then the rest.
  struct Key {
    int rank = 3;
    double number = 0;
    std::string text;
    int slot = 0;  // index of the key in the scratch table of keys
  };

  std::string key_text(int index) {
    if (lua_type(L_, index) == LUA_TSTRING) {
      size_t length = 0;
      const char* s = lua_tolstring(L_, index, &length);
      const std::string name(s, length);
      if (is_identifier(name)) return name;
      return "[" + scripts::lua_quote(std::string(s, length)) + "]";
    }
    return "[" + (lua_type(L_, index) == LUA_TBOOLEAN ? std::string(lua_toboolean(L_, index) ? "true" : "false")
                                                     : lua_tostring_of(L_, index)) +
           "]";
  }

  std::string table(int index, int depth, size_t indent) {
    const void* id = lua_topointer(L_, index);
    if (std::find(path_.begin(), path_.end(), id) != path_.end()) return "<cycle>";
    if (luaL_getmetafield(L_, index, "__tostring")) {
      lua_pop(L_, 1);
      return lua_tostring_of(L_, index);
    }
    lua_pushnil(L_);
    const bool empty = lua_next(L_, index) == 0;
    if (!empty) lua_pop(L_, 2);
    if (empty) return "{}";
    if (depth >= limits_.max_depth) return "{...}";
    if (!lua_checkstack(L_, 8)) return "{...}";
    path_.push_back(id);

    size_t sequence = 0;
    for (;;) {
      lua_rawgeti(L_, index, static_cast<int>(sequence + 1));
      const bool present = !lua_isnil(L_, -1);
      lua_pop(L_, 1);
      if (!present) break;
      ++sequence;
    }
    // The other keys, kept in a scratch table so they can be sorted in C++.
    lua_newtable(L_);
    const int scratch = lua_gettop(L_);
    std::vector<Key> keys;
    lua_pushnil(L_);
    while (lua_next(L_, index) != 0) {
      lua_pop(L_, 1);
      const int type = lua_type(L_, -1);
      if (type == LUA_TNUMBER) {
        const double n = lua_tonumber(L_, -1);
        if (n >= 1 && n <= static_cast<double>(sequence) && n == static_cast<double>(static_cast<size_t>(n))) {
          continue;
        }
      }
      Key key;
      key.slot = static_cast<int>(keys.size() + 1);
      if (type == LUA_TNUMBER) {
        key.rank = 0;
        key.number = lua_tonumber(L_, -1);
      } else if (type == LUA_TSTRING) {
        key.rank = 1;
        size_t length = 0;
        const char* s = lua_tolstring(L_, -1, &length);
        key.text.assign(s, length);
      } else if (type == LUA_TBOOLEAN) {
        key.rank = 2;
        key.number = lua_toboolean(L_, -1);
      } else {
        key.text = lua_typename(L_, type);
      }
      lua_pushvalue(L_, -1);
      lua_rawseti(L_, scratch, key.slot);
      keys.push_back(std::move(key));
    }
    std::stable_sort(keys.begin(), keys.end(), [](const Key& a, const Key& b) {
      if (a.rank != b.rank) return a.rank < b.rank;
      if (a.rank == 0 || a.rank == 2) return a.number < b.number;
      return a.text < b.text;
    });

    std::vector<std::string> items;
    std::vector<bool> packable;  // sequence scalars, which share lines
    const size_t total = sequence + keys.size();
    const size_t shown = std::min(total, limits_.max_items);
    for (size_t i = 0; i < shown; ++i) {
      if (i < sequence) {
        lua_rawgeti(L_, index, static_cast<int>(i + 1));
        packable.push_back(!lua_istable(L_, -1));
        items.push_back(value(lua_gettop(L_), depth + 1, indent + 2));
        lua_pop(L_, 1);
      } else {
        lua_rawgeti(L_, scratch, keys[i - sequence].slot);
        const int key = lua_gettop(L_);
        std::string text = key_text(key) + " = ";
        lua_pushvalue(L_, key);
        lua_rawget(L_, index);
        text += value(lua_gettop(L_), depth + 1, indent + 2);
        lua_pop(L_, 2);
        items.push_back(std::move(text));
        packable.push_back(false);
      }
    }
    if (shown < total) {
      items.push_back("... (" + std::to_string(total - shown) + " more)");
      packable.push_back(false);
    }
    lua_pop(L_, 1);  // scratch
    path_.pop_back();
    return layout(items, packable, indent);
  }

  // One line when it fits; else one item per line, indented, except that
  // runs of sequence scalars fill their lines (an observation of numbers).
  std::string layout(const std::vector<std::string>& items, const std::vector<bool>& packable,
                     size_t indent) const {

    size_t width = indent;  // of "{a, b}": the braces and each ", " make 2 per item
    bool multiline = false;
    for (const std::string& item : items) {
      width += item.size() + 2;
      multiline = multiline || item.find('\n') != std::string::npos;
    }
    std::string out = "{";
    if (!multiline && width <= limits_.line_width) {
      for (size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + items[i];
      return out + "}";
    }
    const std::string margin(indent + 2, ' ');
    std::string row;  // packed scalars not written yet
    for (size_t i = 0; i < items.size(); ++i) {
      const std::string text = items[i] + (i + 1 < items.size() ? "," : "");
      if (packable[i] && !row.empty() && margin.size() + row.size() + 1 + text.size() <= limits_.line_width) {
        row += " " + text;
        continue;
      }
      if (!row.empty()) out += "\n" + margin + row;
      row.clear();
      if (packable[i]) {
        row = text;
      } else {
        out += "\n" + margin + text;
      }
    }
    if (!row.empty()) out += "\n" + margin + row;
    return out + "\n" + std::string(indent, ' ') + "}";
  }

  lua_State* L_;
  PrettyLimits limits_;
  std::vector<const void*> path_;  // tables being printed, outermost first
};

// --- completion -------------------------------------------------------------

// Replaces the value on top of the stack by its field `name`, looked up
// without metamethods except __index tables (followed a few levels); nil when
// absent.
void raw_field(lua_State* L, const std::string& name) {
  for (int level = 0; level < 8 && !lua_isnil(L, -1); ++level) {
    if (lua_istable(L, -1)) {
      lua_pushlstring(L, name.data(), name.size());
      lua_rawget(L, -2);
      if (!lua_isnil(L, -1)) {
        lua_remove(L, -2);
        return;
      }
      lua_pop(L, 1);
    }
    if (!lua_getmetatable(L, -1)) break;
    lua_pushliteral(L, "__index");
    lua_rawget(L, -2);
    lua_remove(L, -2);  // the metatable
    lua_remove(L, -2);  // the value
    if (!lua_istable(L, -1)) break;
  }
  lua_pop(L, 1);
  lua_pushnil(L);
}

// Identifier keys of the value on top of the stack and of its __index tables
// (functions only when `methods`), starting with `prefix`. Pops the value.
void collect_fields(lua_State* L, const std::string& prefix, bool methods, std::set<std::string>* out) {
  for (int level = 0; level < 8 && !lua_isnil(L, -1); ++level) {
    if (lua_istable(L, -1)) {
      lua_pushnil(L);
      while (lua_next(L, -2) != 0) {
        if (lua_type(L, -2) == LUA_TSTRING && (!methods || lua_isfunction(L, -1))) {
          const std::string name = lua_tostring(L, -2);
          if (is_identifier(name) && name.compare(0, prefix.size(), prefix) == 0) out->insert(name);
        }
        lua_pop(L, 1);
      }
    }
    if (!lua_getmetatable(L, -1)) break;
    lua_pushliteral(L, "__index");
    lua_rawget(L, -2);
    lua_remove(L, -2);
    lua_remove(L, -2);
  }
  lua_pop(L, 1);
}

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

// Error handler of console calls: exit()'s sentinel passes unchanged, any
// other error becomes its message and a traceback.
int message_handler(lua_State* L) {
  if (lua_touserdata(L, 1) == &kExitSentinel) return 1;
  return scripts::traceback_handler(L);
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

std::string pretty_value(lua_State* L, int index, const PrettyLimits& limits) {
  const int top = lua_gettop(L);
  if (index < 0 && index > LUA_REGISTRYINDEX) index = top + index + 1;
  std::string text = PrettyPrinter(L, limits).value(index, 0, 0);
  lua_settop(L, top);
  return text;
}

Completion complete_lua(lua_State* L, const std::string& line, size_t cursor) {
  cursor = std::min(cursor, line.size());
  size_t start = cursor;
  while (start > 0 && (is_name_byte(line[start - 1]) || line[start - 1] == '.' || line[start - 1] == ':')) {
    --start;
  }
  const std::string expression = line.substr(start, cursor - start);
  Completion completion;
  if (!expression.empty() && std::isdigit(static_cast<unsigned char>(expression[0]))) return completion;
  const int top = lua_gettop(L);
  std::set<std::string> names;
  const size_t separator = expression.find_last_of(".:");
  if (separator == std::string::npos) {
    completion.start = start;
    lua_pushvalue(L, LUA_GLOBALSINDEX);
    collect_fields(L, expression, false, &names);
    for (const char* k : kKeywords) {
      if (expression.empty() || std::strncmp(k, expression.c_str(), expression.size()) == 0) names.insert(k);
    }
  } else {
    completion.start = start + separator + 1;
    const std::string word = expression.substr(separator + 1);
    lua_pushvalue(L, LUA_GLOBALSINDEX);
    size_t from = 0;
    bool valid = true;
    while (valid && from < separator) {
      size_t dot = expression.find('.', from);
      if (dot == std::string::npos || dot > separator) dot = separator;
      const std::string segment = expression.substr(from, dot - from);
      valid = is_identifier(segment);
      if (valid) raw_field(L, segment);
      from = dot + 1;
    }
    if (valid) collect_fields(L, word, expression[separator] == ':', &names);
  }
  lua_settop(L, top);
  completion.candidates.assign(names.begin(), names.end());
  return completion;
}

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
  if (luaL_loadbuffer(L_, input.data(), input.size(), "=stdin") == 0) return call(false, false);
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
