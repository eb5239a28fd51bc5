// Schedules of config fields on the script side: reading one from a script
// and checking its values against the field's range. engine/config/schedule.h
// holds the plain data the learner evaluates, engine/config/schedule_text.h
// which fields may follow one and its Lua text for config.lua.
//
// In a script a schedule is either
//   - a schedule table {schedule = KIND, axis = "frames" | "progress",
//     points = {{x, value}, ...}}: what the helpers ms.linear, ms.cosine,
//     ms.step, ms.piecewise, ms.constant build (scripts/lua/moonseed/
//     schedule.lua) and what to_lua writes; or
//   - a Lua function of progress, sampled here at load time into a piecewise
//     schedule of kFunctionSamples points over progress [0, 1], so no Lua
//     runs while training. It must be a pure function of its argument.
// docs/lua-api.md "Schedules" is the user's guide.
//
// Ranges: the value at x = 0 (the field's plain value) must be in the field's
// range; later values may also reach an exclusive lower bound, so a learning
// rate in (0, 1] may decay to 0.
//
// Failures are returned as values (ScheduleRead::problem); nothing throws for
// a bad script. Thread-safety: the functions touch only their arguments; the
// lua_State is used by the calling thread only.
#pragma once

#include <optional>
#include <string>

#include <lua.hpp>

#include "engine/config/experiment_config.h"
#include "engine/config/schedule.h"
#include "engine/config/schema.h"

namespace moonseed::scripts {

// Points of a sampled Lua function: progress k / 256 for k = 0..256.
constexpr int kFunctionSamples = 257;

// True when the Lua value at `index` is written as a schedule: a function, or
// a table whose `schedule` key is a string.
bool is_schedule_value(lua_State* L, int index);

struct ScheduleRead {
  std::optional<engine::Schedule> schedule;  // set when the value is a valid schedule for the field
  std::string problem;                       // else what is wrong
  // Where the problem is when that is known better than the field's own line
  // (the definition of a Lua function); "" and 0 otherwise.
  std::string file;
  int line = 0;
};

// Reads the schedule at `index` (a table or a function; anything else is a
// problem) for `field`: its form, engine::schedule_problem, and every value
// against the field's range. Calls a function kFunctionSamples times in a
// protected call. Leaves the Lua stack as it was.
ScheduleRead read_schedule(lua_State* L, int index, const engine::FieldSchema& field);

}  // namespace moonseed::scripts
