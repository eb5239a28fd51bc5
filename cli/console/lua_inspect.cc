// The console's view of Lua values: pretty printing and name completion
// (declared in cli/console/lua_repl.h, whose header comment describes both).
#include "base/text.h"
#include "cli/console/lua_repl.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <set>
#include <vector>

#include "engine/config/values.h"

namespace moonseed::cli {
namespace {
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
        return base::lua_quote(std::string(s, length));
      }
      case LUA_TTABLE: return table(index, depth, indent);
      case LUA_TNUMBER: return base::number_text(lua_tonumber(L_, index));  // as ctl status and the logs write it
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
      return "[" + base::lua_quote(std::string(s, length)) + "]";
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

}  // namespace moonseed::cli
