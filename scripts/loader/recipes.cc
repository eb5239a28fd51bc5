#include "scripts/loader/recipes.h"

#include <algorithm>
#include <cstring>
#include <optional>

#include "base/text.h"

namespace moonseed::scripts {
namespace {

// Pushes a shallow copy of the table at `index` without its `extends` key.
// Nested sections stay the same tables (and keep the places their helpers
// recorded).
void push_without_extends(lua_State* L, int index) {
  lua_newtable(L);
  lua_pushnil(L);
  while (lua_next(L, index) != 0) {
    if (lua_type(L, -2) == LUA_TSTRING && std::strcmp(lua_tostring(L, -2), "extends") == 0) {
      lua_pop(L, 1);
      continue;
    }
    lua_pushvalue(L, -2);
    lua_insert(L, -2);
    lua_rawset(L, -4);
  }
}

// require(name), leaving the recipe's table on the stack. Returns the file it
// came from, or nullopt after reporting at file:line why it cannot be used.
// An error raised while the recipe runs is a ScriptError, as in the script.
std::optional<std::string> require_recipe(LuaState& lua, const std::string& name, const std::string& file,
                                          int line, std::vector<ConfigIssue>* issues) {
  lua_State* L = lua.get();
  lua_getglobal(L, "require");
  lua_pushlstring(L, name.data(), name.size());
  if (pcall_with_traceback(L, 1, 1) != 0) {
    const std::string message = lua_isstring(L, -1) ? lua_tostring(L, -1) : "(error object is not a string)";
    lua_pop(L, 1);
    // require's own wording (LuaJIT lib_package.c), then each loader's "no file ..." lines.
    const std::string not_found = "module '" + name + "' not found:";
    if (message.compare(0, not_found.size(), not_found) != 0) throw ScriptError(message);
    const std::string tried = message.substr(not_found.size());
    issues->push_back(ConfigIssue{file, line, "extends",
                                  "recipe " + base::lua_quote(name) + " not found; tried:" +
                                      tried.substr(0, tried.find("\nstack traceback:"))});
    return std::nullopt;
  }
  if (!lua_istable(L, -1)) {
    issues->push_back(ConfigIssue{file, line, "extends",
                                  "recipe " + base::lua_quote(name) + " must return an experiment table, got " +
                                      describe_value(L, -1)});
    lua_pop(L, 1);
    return std::nullopt;
  }
  const LoadedLuaFile* source = lua.module_file(name);
  return source != nullptr ? source->path : "module " + name;
}

}  // namespace

std::vector<RecipeLayer> extends_chain(LuaState& lua, ScriptReader& reader, const std::string& script,
                                       std::vector<ConfigIssue>* issues) {
  lua_State* L = lua.get();
  std::vector<RecipeLayer> layers;
  std::vector<std::string> chain{script};
  int table = lua_gettop(L);
  std::string file = script;
  for (;;) {
    if (!lua_checkstack(L, 8)) throw std::runtime_error("extends chain too long: " + base::join(chain));
    const Place place = reader.root_place(table, file);
    lua_pushliteral(L, "extends");
    lua_rawget(L, table);
    const int type = lua_type(L, -1);
    const std::string base = type == LUA_TSTRING ? lua_tostring(L, -1) : "";
    const std::string got = describe_value(L, -1);
    lua_pop(L, 1);
    if (type == LUA_TNIL) {
      lua_pushvalue(L, table);
      layers.push_back(RecipeLayer{lua_gettop(L), place});
      return layers;
    }
    push_without_extends(L, table);
    layers.push_back(RecipeLayer{lua_gettop(L), place});

    const int line = reader.line_of_key(place, "extends");
    if (type != LUA_TSTRING) {
      issues->push_back(ConfigIssue{place.file, line, "extends",
                                    "expected a string naming a recipe module like \"team.recipe\", got " + got});
      return layers;
    }
    if (std::find(chain.begin() + 1, chain.end(), base) != chain.end()) {
      issues->push_back(
          ConfigIssue{place.file, line, "extends", "cycle of recipes: " + base::join(chain, " -> ") + " -> " + base});
      return layers;
    }
    chain.push_back(base);
    const std::optional<std::string> base_file = require_recipe(lua, base, place.file, line, issues);
    if (!base_file) return layers;
    table = lua_gettop(L);
    file = *base_file;
  }
}

void read_layer(ScriptReader& reader, const RecipeLayer& layer, AssignedFields* values) {
  // The maps below are set aside, so that the reader's replace-on-read leaves
  // the ones this layer does not set, and merged back after.
  AssignedFields earlier_maps;
  for (auto it = values->begin(); it != values->end();) {
    if (std::holds_alternative<engine::NumberMap>(it->second.value)) {
      earlier_maps.emplace(it->first, std::move(it->second));
      it = values->erase(it);
    } else {
      ++it;
    }
  }
  reader.read_section(layer.index, "", layer.place);
  for (auto& [field_path, earlier] : earlier_maps) {
    auto it = values->find(field_path);
    if (it == values->end()) {
      values->emplace(field_path, std::move(earlier));
      continue;
    }
    const engine::NumberMap* own = std::get_if<engine::NumberMap>(&it->second.value);
    if (own != nullptr) it->second.value = merged_by_key(std::get<engine::NumberMap>(earlier.value), *own);
  }
}

}  // namespace moonseed::scripts
