// The filter table of log:episodes() and log:steps() (scripts/api/lua_log_api.cc,
// docs/experience-log.md "Reading experience logs from Lua"): {episode, actor,
// since, until} for both, {limit, columns} for steps, checked and turned into
// an explog::RecordFilter.
//
// `since` and `until` are wall times as Lua sees them (doubles): the bounds
// become the int64 range of every wall time whose double passes, so a
// start_ns/end_ns handed back as a bound includes its record.
//
// Failures are Lua errors (luaL_error) naming the function and the field: a
// filter that is not a table, an unknown field, a value of the wrong type or
// out of range, an unknown column (with "did you mean").
// Thread-safety: the calling thread's Lua state only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

#include <lua.hpp>

#include "explog/reader.h"

namespace moonseed::scripts {

// What a filter table asks for.
struct LogReadOptions {
  explog::RecordFilter filter;
  int64_t limit = std::numeric_limits<int64_t>::max();
  std::optional<std::vector<size_t>> columns;  // schema indices; all when absent
};

// The filter table at `index` (absent or nil: no filter); `steps` allows
// limit and columns, whose names are looked up in `schema`.
LogReadOptions check_log_filter(lua_State* L, int index, const char* function, bool steps,
                                const explog::LogSchema& schema);

// The least int64 whose value as a double is >= d (int64 max when none is),
// and the greatest whose value is <= d: the `since` and `until` bounds.
int64_t least_at_least(double d);
int64_t greatest_at_most(double d);

}  // namespace moonseed::scripts
