#include "scripts/api/lua_log_filter.h"

#include <cmath>
#include <cstdio>
#include <string>

#include "base/text.h"
#include "scripts/api/lua_api.h"
#include "scripts/state/lua_arrays.h"

namespace moonseed::scripts {
namespace {

constexpr double kTwoTo63 = 9223372036854775808.0;

// The field `name` of the table at `index` as a whole number in [min, max], if set.
std::optional<int64_t> integer_option(lua_State* L, int index, const char* function, const char* name,
                                      double min, double max) {
  lua_getfield(L, index, name);
  std::optional<int64_t> out;
  if (lua_type(L, -1) == LUA_TNUMBER) {
    const double v = lua_tonumber(L, -1);
    if (!(v >= min && v <= max) || v != std::floor(v)) {
      char range[96];
      std::snprintf(range, sizeof range, "[%.0f, %.0f]", min, max);
      luaL_error(L, "%s: '%s' must be a whole number in %s, got %s", function, name, range,
                 lua_tostring(L, -1));
    }
    // max may be 2^63, one past int64's range: clamp.
    out = v >= kTwoTo63 ? std::numeric_limits<int64_t>::max() : static_cast<int64_t>(v);
  } else if (!lua_isnil(L, -1)) {
    luaL_error(L, "%s: '%s' must be a number, got %s", function, name, luaL_typename(L, -1));
  }
  lua_pop(L, 1);
  return out;
}

// The field `name` as a number that is not NaN, if set.
std::optional<double> number_option(lua_State* L, int index, const char* function, const char* name) {
  lua_getfield(L, index, name);
  std::optional<double> out;
  if (lua_type(L, -1) == LUA_TNUMBER) {
    out = lua_tonumber(L, -1);
    if (std::isnan(*out)) luaL_error(L, "%s: '%s' must be a number, got nan", function, name);
  } else if (!lua_isnil(L, -1)) {
    luaL_error(L, "%s: '%s' must be a number, got %s", function, name, luaL_typename(L, -1));
  }
  lua_pop(L, 1);
  return out;
}

}  // namespace

// Every int64 rounding to one double lies within one ulp of it (at most 2048
// near 2^63), so a search over 4096 neighbours finds the bound.
int64_t least_at_least(double d) {
  if (d <= -kTwoTo63) return std::numeric_limits<int64_t>::min();
  if (d >= kTwoTo63) return std::numeric_limits<int64_t>::max();
  int64_t hi = static_cast<int64_t>(std::ceil(d));  // satisfies it; the answer is <= hi
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  int64_t lo = hi > kMin + 4096 ? hi - 4096 : kMin;
  while (lo < hi) {  // invariant: the answer is in [lo, hi]
    const int64_t mid = lo + (hi - lo) / 2;
    if (static_cast<double>(mid) >= d) hi = mid; else lo = mid + 1;
  }
  return hi;
}

int64_t greatest_at_most(double d) {
  if (d >= kTwoTo63) return std::numeric_limits<int64_t>::max();
  if (d < -kTwoTo63) return std::numeric_limits<int64_t>::min();
  int64_t lo = static_cast<int64_t>(std::floor(d));
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  int64_t hi = lo < kMax - 4096 ? lo + 4096 : kMax;
  while (lo < hi) {  // invariant: the answer is in [lo, hi]
    const int64_t mid = hi - (hi - lo) / 2;
    if (static_cast<double>(mid) <= d) lo = mid; else hi = mid - 1;
  }
  return lo;
}

namespace {

// The `columns` field, on top of the stack: names -> schema indices.
std::vector<size_t> column_option(lua_State* L, const char* function, const explog::LogSchema& schema) {
  std::vector<std::string> names;
  for (const explog::ColumnSpec& c : schema.columns) names.push_back(c.name);
  if (lua_type(L, -1) != LUA_TTABLE || !is_sequence(L, -1)) {
    luaL_error(L, "%s: 'columns' must be an array of column names, got %s", function, luaL_typename(L, -1));
  }
  std::vector<size_t> out;
  const size_t n = lua_objlen(L, -1);
  for (size_t i = 1; i <= n; ++i) {
    lua_rawgeti(L, -1, static_cast<int>(i));
    if (lua_type(L, -1) != LUA_TSTRING) {
      luaL_error(L, "%s: columns[%d] must be a column name, got %s", function, static_cast<int>(i),
                 luaL_typename(L, -1));
    }
    size_t len = 0;
    const char* text = lua_tolstring(L, -1, &len);
    const std::string name(text, len);
    lua_pop(L, 1);
    size_t c = 0;
    while (c < names.size() && names[c] != name) ++c;
    if (c == names.size()) {
      const std::string close = base::closest_name(name, names);
      luaL_error(L, "%s: unknown column '%s'%s (the log has %s)", function, name.c_str(),
                 close.empty() ? "" : ("; did you mean '" + close + "'?").c_str(), base::join(names).c_str());
    }
    out.push_back(c);
  }
  return out;
}

}  // namespace

LogReadOptions check_log_filter(lua_State* L, int index, const char* function, bool steps,
                                const explog::LogSchema& schema) {
  LogReadOptions o;
  if (lua_isnoneornil(L, index)) return o;
  if (lua_type(L, index) != LUA_TTABLE) {
    luaL_error(L, "%s: expected a filter table such as {actor = 0}, got %s", function,
               luaL_typename(L, index));
  }
  std::vector<std::string> known = {"episode", "actor", "since", "until"};
  if (steps) known.insert(known.end(), {"limit", "columns"});
  check_known_fields(L, index, function, known);
  o.filter.episode_id = integer_option(L, index, function, "episode", -kTwoTo63, kTwoTo63);
  if (const auto actor = integer_option(L, index, function, "actor", std::numeric_limits<int32_t>::min(),
                                        std::numeric_limits<int32_t>::max())) {
    o.filter.actor_id = static_cast<int32_t>(*actor);
  }
  if (const auto since = number_option(L, index, function, "since")) {
    o.filter.min_wall_time_ns = least_at_least(*since);
  }
  if (const auto until = number_option(L, index, function, "until")) {
    o.filter.max_wall_time_ns = greatest_at_most(*until);
  }
  if (!steps) return o;
  if (const auto limit = integer_option(L, index, function, "limit", 0, kTwoTo63)) o.limit = *limit;
  lua_getfield(L, index, "columns");
  if (!lua_isnil(L, -1)) o.columns = column_option(L, function, schema);
  lua_pop(L, 1);
  return o;
}

}  // namespace moonseed::scripts
