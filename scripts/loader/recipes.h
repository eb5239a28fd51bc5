// Recipes (docs/recipes.md): an experiment table's `extends = "team.recipe"`
// names a module, found by `require` on the script's search path
// (lua_state.h), that returns a base experiment table, which may extend
// another. extends_chain resolves the chain; read_layer merges one table over
// the ones below it, deep, the child winning: a field it sets replaces the
// base's, a section set in part keeps the base's other fields, lists are
// replaced whole, number maps (env.options) merge by key.
//
// Failures: `extends` that is not a string, a recipe that cannot be found
// (the message lists the files tried), one that returns no table, and a
// cycle (the chain is named) are ConfigIssues at the `extends` line, which end
// the chain there. An error raised while a recipe runs is a ScriptError, as
// in the script.
//
// The tables stay on the caller's Lua stack, which owns them; not
// thread-safe (one LuaState, one thread).
#pragma once

#include <string>
#include <vector>

#include "scripts/loader/assigned_fields.h"
#include "scripts/api/config_error.h"
#include "scripts/loader/config_reader.h"
#include "scripts/state/lua_state.h"

namespace moonseed::scripts {

// One table of an experiment's extends chain: the script's or a recipe's.
struct RecipeLayer {
  int index;    // absolute stack index of the table, without its `extends`
  Place place;  // where the table was written
};

// The script's table (on top of the stack) and the recipes it extends, child
// first, each pushed as a copy without `extends` (so the reader sees config
// fields only). A problem with `extends` itself is reported at its line and
// ends the chain there. Throws std::runtime_error when the chain outgrows the
// Lua stack.
std::vector<RecipeLayer> extends_chain(LuaState& lua, ScriptReader& reader, const std::string& script,
                                       std::vector<ConfigIssue>* issues);

// Reads one layer over the values of the layers below it: a field it sets
// replaces theirs, except number maps, which merge by key (its keys win; the
// merged map is attributed to this layer).
void read_layer(ScriptReader& reader, const RecipeLayer& layer, AssignedFields* values);

}  // namespace moonseed::scripts
