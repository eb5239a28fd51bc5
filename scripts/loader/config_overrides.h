// Command-line overrides ("optimizer.lr=3e-4"): the last layer of an
// experiment's values, over the script's. The value text is typed by the
// field's schema (engine/config/values.h parse_value); ranges are checked
// later, with every other value. "env.options.NAME=VALUE" sets one entry of a
// number map, keeping the others. reward_shaping is a Lua function and cannot
// be overridden.
//
// A value that is not plain text for its field, and any value given to a
// section, is the Lua expression a script would hold there
// ("optimizer.lr=ms.linear(1e-3, 1e-4, 1e6)", "model.hidden={64, 64}",
// "model=ms.layers{ms.nn.linear(32), ms.nn.tanh()}"): it is evaluated in the
// loader's sandboxed state, under the same time and memory limits as the
// script (`ms` is require "moonseed"), and read like the script's own value
// (schedules, lists, layers). An expression that does not compile or gives
// nil leaves the plain text's error; one that raises reports Lua's error.
//
// Failures: a malformed override, an unknown field (with "did you mean"), a
// section and a value that does not parse are ConfigIssues from "command
// line", quoting the override. Nothing throws but Lua's out-of-memory.
//
// Thread-safety: uses the reader's Lua state; call from the thread that owns it.
#pragma once

#include <string>
#include <vector>

#include "scripts/loader/assigned_fields.h"
#include "scripts/api/config_error.h"
#include "scripts/loader/config_reader.h"

namespace moonseed::scripts {

// Sets the field `text` names in `values`, attributed to the command line.
// `lua` (the reader of the script's state, writing into the same `values`
// and `issues`) evaluates Lua values; without it only plain text is taken.
void apply_override(const std::string& text, AssignedFields* values, std::vector<ConfigIssue>* issues,
                    ScriptReader* lua = nullptr);

}  // namespace moonseed::scripts
