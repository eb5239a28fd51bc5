// Writes a resolved config back as a plain Lua script listing every field
// (the run directory's config.lua, which `moonseed run --resume` reads), so a
// run restarts from what it ran, not from a script that may have changed.
//
// Pure function; thread-safe.
#pragma once

#include <string>

#include "engine/config/experiment_config.h"

namespace moonseed::scripts {

// The config as `return { ... }`, one field a line, sections nested, values
// as engine::field_literal writes them (schedules included), and
// reward_shaping as its function's own text (or false). load_experiment reads
// it back to an equal config.
std::string to_lua(const engine::ExperimentConfig& config);

}  // namespace moonseed::scripts
