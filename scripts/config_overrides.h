// Command-line overrides ("optimizer.lr=3e-4"): the last layer of an
// experiment's values, over the script's. The value text is typed by the
// field's schema (engine/config/values.h parse_value); ranges are checked
// later, with every other value. "env.options.NAME=VALUE" sets one entry of a
// number map, keeping the others. reward_shaping is a Lua function and cannot
// be overridden.
//
// Failures: a malformed override, an unknown field (with "did you mean"), a
// section and a value that does not parse are ConfigIssues from "command
// line", quoting the override. Nothing throws.
//
// Pure functions on the caller's values; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "scripts/assigned_fields.h"
#include "scripts/config_error.h"

namespace moonseed::scripts {

// Sets the field `text` names in `values`, attributed to the command line.
void apply_override(const std::string& text, AssignedFields* values, std::vector<ConfigIssue>* issues);

}  // namespace moonseed::scripts
