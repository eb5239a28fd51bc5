#include "scripts/api/shaping_function.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <optional>
#include <vector>

#include "scripts/state/embedded_lua.h"
#include "scripts/state/reward_shaper.h"
#include "scripts/api/source_locator.h"

namespace moonseed::scripts {
namespace {

using Token = SourceLocator::Token;

bool is_name(const Token& t, const char* text) { return t.kind == Token::kName && t.text == text; }
bool is_punct(const Token& t, const char* text) { return t.kind == Token::kPunct && t.text == text; }

// The file a chunk name "@path" names: on disk, or the engine's embedded library.
std::optional<std::string> file_text(const std::string& path) {
  if (const EmbeddedLuaModule* module = find_embedded_lua_file(path.c_str())) {
    return std::string(module->source, module->size);
  }
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return std::nullopt;
  std::string text;
  char buffer[8192];
  size_t n = 0;
  while ((n = std::fread(buffer, 1, sizeof buffer, f)) > 0) text.append(buffer, n);
  const bool failed = std::ferror(f) != 0;
  std::fclose(f);
  if (failed) return std::nullopt;
  return text;
}

// Index of the `end` closing the block opened by tokens[open], or npos.
// Blocks that close with `end`: function, do (while and for bodies), if.
size_t matching_end(const std::vector<Token>& tokens, size_t open) {
  int depth = 0;
  for (size_t i = open; i < tokens.size(); ++i) {
    const Token& t = tokens[i];
    if (t.kind != Token::kName) continue;
    if (t.text == "function" || t.text == "do" || t.text == "if") {
      ++depth;
    } else if (t.text == "end" && --depth == 0) {
      return i;
    }
  }
  return std::string::npos;
}

// One `function ... end` in the file's tokens.
struct Candidate {
  size_t keyword = 0;  // `function`
  size_t paren = 0;    // `(` opening its parameters
  size_t end = 0;      // its `end`
  int params = 0;      // named parameters
  bool vararg = false;
  bool method = false;
};

std::optional<Candidate> candidate_at(const std::vector<Token>& tokens, size_t keyword) {
  Candidate c;
  c.keyword = keyword;
  size_t i = keyword + 1;
  for (; i < tokens.size() && !is_punct(tokens[i], "("); ++i) {
    if (is_punct(tokens[i], ":")) c.method = true;
    if (tokens[i].kind != Token::kName && !is_punct(tokens[i], ".") && !is_punct(tokens[i], ":")) return std::nullopt;
  }
  if (i == tokens.size()) return std::nullopt;
  c.paren = i;
  for (++i; i < tokens.size() && !is_punct(tokens[i], ")"); ++i) {
    if (tokens[i].kind == Token::kName) ++c.params;
    if (is_punct(tokens[i], "...")) c.vararg = true;
  }
  c.end = matching_end(tokens, keyword);
  if (c.end == std::string::npos) return std::nullopt;
  return c;
}

// debug.getinfo(f, "u"): LuaJIT's parameter count and vararg flag, when the
// state still has debug.getinfo.
std::optional<std::pair<int, bool>> parameters_of(lua_State* L, int index) {
  std::optional<std::pair<int, bool>> out;
  const int top = lua_gettop(L);
  lua_getglobal(L, "debug");
  if (lua_istable(L, -1)) {
    lua_getfield(L, -1, "getinfo");
    if (lua_isfunction(L, -1)) {
      lua_pushvalue(L, index);
      lua_pushliteral(L, "u");
      if (lua_pcall(L, 2, 1, 0) == 0 && lua_istable(L, -1)) {
        lua_getfield(L, -1, "nparams");
        lua_getfield(L, -2, "isvararg");
        if (lua_isnumber(L, -2)) out = std::make_pair(static_cast<int>(lua_tointeger(L, -2)), lua_toboolean(L, -1) != 0);
      }
    }
  }
  lua_settop(L, top);
  return out;
}

std::string upvalue_names(lua_State* L, int index, int count) {
  std::string names;
  for (int i = 1; i <= count; ++i) {
    const char* name = lua_getupvalue(L, index, i);
    if (name == nullptr) break;
    lua_pop(L, 1);
    names += std::string(names.empty() ? "" : ", ") + "'" + (*name ? name : "?") + "'";
  }
  return names;
}

// Registry key of the functions push_shaping_function made: function -> {source, chunk, line}.
constexpr const char* kPushedFunctions = "moonseed.pushed_shaping_functions";

// The text push_shaping_function kept for the function at `index`, if it made it.
std::optional<engine::RewardShapingConfig> pushed_text(lua_State* L, int index) {
  std::optional<engine::RewardShapingConfig> out;
  lua_getfield(L, LUA_REGISTRYINDEX, kPushedFunctions);
  if (lua_istable(L, -1)) {
    lua_pushvalue(L, index);
    lua_rawget(L, -2);
    if (lua_istable(L, -1)) {
      engine::RewardShapingConfig c;
      lua_getfield(L, -1, "source");
      lua_getfield(L, -2, "chunk");
      lua_getfield(L, -3, "line");
      c.source = lua_tostring(L, -3);
      c.chunk_name = lua_tostring(L, -2);
      c.first_line = static_cast<int>(lua_tointeger(L, -1));
      lua_pop(L, 3);
      out = std::move(c);
    }
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  return out;
}

}  // namespace

void push_shaping_function(lua_State* L, const engine::RewardShapingConfig& config) {
  // Padded to its first line, so Lua's positions in errors are the file's.
  const std::string chunk = std::string(static_cast<size_t>(std::max(config.first_line - 1, 0)), '\n') +
                            "return " + config.source;
  if (luaL_loadbuffer(L, chunk.data(), chunk.size(), config.chunk_name.c_str()) != 0) lua_error(L);
  lua_call(L, 0, 1);
  lua_getfield(L, LUA_REGISTRYINDEX, kPushedFunctions);
  if (!lua_istable(L, -1)) {
    lua_pop(L, 1);
    lua_newtable(L);
    lua_createtable(L, 0, 1);
    lua_pushliteral(L, "k");  // weak keys: the record never keeps a function alive
    lua_setfield(L, -2, "__mode");
    lua_setmetatable(L, -2);
    lua_pushvalue(L, -1);
    lua_setfield(L, LUA_REGISTRYINDEX, kPushedFunctions);
  }
  lua_pushvalue(L, -2);
  lua_createtable(L, 0, 3);
  lua_pushlstring(L, config.source.data(), config.source.size());
  lua_setfield(L, -2, "source");
  lua_pushlstring(L, config.chunk_name.data(), config.chunk_name.size());
  lua_setfield(L, -2, "chunk");
  lua_pushinteger(L, config.first_line);
  lua_setfield(L, -2, "line");
  lua_rawset(L, -3);
  lua_pop(L, 1);
}

ShapingRead read_shaping_function(lua_State* L, int index) {
  if (index < 0 && index > LUA_REGISTRYINDEX) index = lua_gettop(L) + index + 1;
  ShapingRead out;
  // A function ms.load_experiment handed out: its text is known, whatever its file holds now.
  if (std::optional<engine::RewardShapingConfig> pushed = pushed_text(L, index)) {
    out.function = std::move(*pushed);
    return out;
  }
  lua_Debug ar;
  std::memset(&ar, 0, sizeof ar);
  lua_pushvalue(L, index);
  lua_getinfo(L, ">Su", &ar);
  if (ar.what != nullptr && std::strcmp(ar.what, "C") == 0) {
    out.problem = "expected a Lua function written in the script, got a C function";
    return out;
  }
  const std::string source = ar.source != nullptr ? ar.source : "";
  if (source.size() < 2 || source[0] != '@') {
    out.problem = "the function must be written in a script file; this one was compiled from a string (" +
                  source.substr(0, 60) + ")";
    return out;
  }
  out.file = source.substr(1);
  out.line = ar.linedefined;
  if (ar.nups > 0) {
    out.problem = "the function refers to " + upvalue_names(L, index, ar.nups) +
                  ", defined outside it (an upvalue). It runs in each actor process, where only its own "
                  "text exists: write constants inline and define helpers inside it; only the standard "
                  "math, string, table and bit libraries are there (no modules from require)";
    return out;
  }
  const std::optional<std::string> text = file_text(out.file);
  if (!text) {
    out.problem = "cannot read " + out.file + " to take the function's text";
    return out;
  }
  const std::vector<Token> tokens = SourceLocator::tokenize(*text);
  std::vector<Candidate> candidates;
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (!is_name(tokens[i], "function")) continue;
    // LuaJIT dates an anonymous function from the token after `function`.
    const bool on_line = tokens[i].line == ar.linedefined ||
                         (i + 1 < tokens.size() && tokens[i + 1].line == ar.linedefined && tokens[i].line < ar.linedefined);
    if (!on_line) continue;
    std::optional<Candidate> c = candidate_at(tokens, i);
    if (c && tokens[c->end].line == ar.lastlinedefined) candidates.push_back(*c);
  }
  if (candidates.size() > 1) {
    if (const auto params = parameters_of(L, index)) {
      std::vector<Candidate> same;
      for (const Candidate& c : candidates) {
        if (c.params == params->first && c.vararg == params->second) same.push_back(c);
      }
      candidates.swap(same);
    }
  }
  if (candidates.size() != 1) {
    out.problem = candidates.empty()
                      ? "cannot find the function's text between lines " + std::to_string(ar.linedefined) +
                            " and " + std::to_string(ar.lastlinedefined)
                      : "several functions start and end on the same lines as this one; write reward_shaping's "
                        "function on lines of its own";
    return out;
  }
  const Candidate& c = candidates.front();
  if (c.method) {
    out.problem = "write reward_shaping as `function(n, reward, ...)`, not as a method (`function M:f(`)";
    return out;
  }
  const Token& keyword = tokens[c.keyword];
  const Token& paren = tokens[c.paren];
  const size_t stop = tokens[c.end].end;
  std::string function_text;
  if (c.paren == c.keyword + 1) {
    function_text = text->substr(keyword.begin, stop - keyword.begin);
  } else {
    // `function name(`: without the name, keeping the lines where they were.
    function_text = "function" + std::string(static_cast<size_t>(paren.line - keyword.line), '\n') +
                    text->substr(paren.begin, stop - paren.begin);
  }
  out.function.source = std::move(function_text);
  out.function.chunk_name = source;
  out.function.first_line = keyword.line;
  out.line = keyword.line;
  const std::string error = RewardShaper::compile_error(out.function);
  if (!error.empty()) out.problem = "the function's text does not compile on its own: " + error;
  return out;
}

}  // namespace moonseed::scripts
