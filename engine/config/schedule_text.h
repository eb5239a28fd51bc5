// Schedules of config fields as text: the Lua literal config.lua holds, the
// one-line description logs and reload diffs show, and why a field cannot
// follow a schedule. Reading schedules from a script is scripts/api/lua_schedules.h.
//
// Pure functions; thread-safe.
#pragma once

#include <string>

#include "engine/config/experiment_config.h"
#include "engine/config/schedule.h"
#include "engine/config/schema.h"

namespace moonseed::engine {

// "" when `field` may follow a schedule (schedulable_field), else why
// not: "cannot follow a schedule: it is restart-only (...)".
std::string schedule_refusal(const FieldSchema& field);

// The schedule table that reads back equal:
// {schedule = "linear", axis = "frames", points = {{0, 0.001}, {5000000, 0}}}.
std::string schedule_literal(const Schedule& schedule);

// A short description for logs and reload diffs: "linear over frames: (0, 0.001) -> (5000000, 0)";
// long point lists show their first and last points and the count.
std::string schedule_text(const Schedule& schedule);

// The field's value in `config` as Lua: its schedule's literal when it has
// one, else lua_literal of its plain value.
std::string field_literal(const FieldSchema& field, const ExperimentConfig& config);

}  // namespace moonseed::engine
