#include "scripts/loader/config_overrides.h"

#include <cstdlib>
#include <stdexcept>

#include "base/text.h"
#include "engine/config/values.h"
#include "scripts/state/lua_state.h"

namespace moonseed::scripts {
namespace {

enum class LuaValue { kRead, kNotLua, kFailed };

// Evaluates `value_text` as a Lua expression in the reader's state and reads
// it as the value of `path` (a field or a section). kNotLua: it does not
// compile, or it is nil. kFailed: `*error` says why it raised.
LuaValue read_lua_value(ScriptReader& reader, const std::string& path, const std::string& value_text,
                        std::string* error) {
  // A number literal the field's parser refused ("2.5" for an integer) keeps that parser's words.
  char* end = nullptr;
  std::strtod(value_text.c_str(), &end);
  if (!value_text.empty() && end == value_text.c_str() + value_text.size()) return LuaValue::kNotLua;
  lua_State* L = reader.state();
  const int top = lua_gettop(L);
  // One line, so Lua's positions read "command line:1:".
  const std::string chunk = "local ms = require 'moonseed'; return " + value_text + "\n";
  if (luaL_loadbuffer(L, chunk.data(), chunk.size(), "=command line") != 0) {
    lua_settop(L, top);
    return LuaValue::kNotLua;
  }
  if (lua_pcall(L, 0, 1, 0) != 0) {
    *error = lua_isstring(L, -1) ? lua_tostring(L, -1) : describe_value(L, -1);
    lua_settop(L, top);
    return LuaValue::kFailed;
  }
  if (lua_isnil(L, -1)) {
    lua_settop(L, top);
    return LuaValue::kNotLua;
  }
  // {leaf = value}, read in the leaf's section as a script's table would be.
  const size_t dot = path.rfind('.');
  const std::string section = dot == std::string::npos ? "" : path.substr(0, dot);
  const std::string leaf = dot == std::string::npos ? path : path.substr(dot + 1);
  lua_createtable(L, 0, 1);
  lua_insert(L, -2);
  lua_setfield(L, -2, leaf.c_str());
  reader.read_section(-1, section, Place{kCommandLine, std::nullopt, 0});
  lua_settop(L, top);
  return LuaValue::kRead;
}

}  // namespace

void apply_override(const std::string& text, AssignedFields* values, std::vector<ConfigIssue>* issues,
                    ScriptReader* lua) {
  const size_t eq = text.find('=');
  const std::string path = text.substr(0, std::min(eq, text.size()));
  auto fail = [&](const std::string& field, const std::string& message) {
    issues->push_back(ConfigIssue{kCommandLine, 0, field, message + " (in override '" + text + "')"});
  };
  if (eq == std::string::npos || path.empty()) return fail(text, "expected FIELD=VALUE");
  if (path == engine::kRewardShapingPath) return fail(path, "is a Lua function: set it in the script");
  const std::string value_text = text.substr(eq + 1);
  // The value as a Lua expression; false when it is none, so the plain text's error stands.
  auto as_lua = [&]() {
    if (lua == nullptr) return false;
    std::string error;
    const size_t issues_before = issues->size();
    const LuaValue read = read_lua_value(*lua, path, value_text, &error);
    if (read == LuaValue::kNotLua) return false;
    if (read == LuaValue::kFailed) {
      fail(path, "the value raised an error as a Lua expression: " + error);
      return true;
    }
    // The reader blames the command line (the chunk "=command line" has no file); quote the override.
    for (size_t i = issues_before; i < issues->size(); ++i) (*issues)[i].message += " (in override '" + text + "')";
    return true;
  };
  try {
    if (const engine::FieldSchema* field = engine::find_field(path)) {
      try {
        (*values)[path] = Assigned{engine::parse_value(*field, value_text), kCommandLine, 0};
      } catch (const std::invalid_argument& e) {
        if (!as_lua()) fail(path, e.what());
      }
      return;
    }
    // "env.options.NAME=VALUE": one entry of a map field, merged into its value.
    const size_t dot = path.rfind('.');
    const engine::FieldSchema* map = dot == std::string::npos ? nullptr : engine::find_field(path.substr(0, dot));
    if (map != nullptr && map->type == engine::FieldType::kNumberMap) {
      // The map's own parser checks the name and the number.
      const engine::FieldValue entry = engine::parse_value(*map, path.substr(dot + 1) + "=" + value_text);
      const engine::NumberMap& set = std::get<engine::NumberMap>(entry);
      if (set.size() != 1) return fail(path, "expected one number, got '" + value_text + "'");
      const Assigned* earlier = find_assigned(*values, map->path);
      const engine::FieldValue current = earlier != nullptr ? earlier->value : map->get(engine::ExperimentConfig{});
      (*values)[map->path] = Assigned{merged_by_key(std::get<engine::NumberMap>(current), set), kCommandLine, 0};
      return;
    }
  } catch (const std::invalid_argument& e) {
    return fail(path, e.what());
  }
  if (engine::is_section(path)) {
    if (as_lua()) return;
    return fail(path, "is a section; set one of its fields (" + base::join(engine::names_in(path)) +
                          ") or give it a table, e.g. " + path + "={...}");
  }
  fail(path, engine::unknown_field_problem(path));
}

}  // namespace moonseed::scripts
