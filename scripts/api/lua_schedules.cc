#include "scripts/api/lua_schedules.h"

#include <vector>

#include "base/text.h"
#include "engine/config/values.h"
#include "scripts/state/lua_arrays.h"
#include "scripts/state/lua_state.h"

namespace moonseed::scripts {
namespace {

using engine::Schedule;

constexpr Schedule::Kind kKinds[] = {Schedule::Kind::kConstant, Schedule::Kind::kLinear, Schedule::Kind::kCosine,
                                     Schedule::Kind::kStep, Schedule::Kind::kPiecewise};
const char* const kTableKeys[] = {"schedule", "axis", "points"};

// Restores the Lua stack top when a reader returns, whatever path it takes.
class StackGuard {
 public:
  explicit StackGuard(lua_State* L) : L_(L), top_(lua_gettop(L)) {}
  ~StackGuard() { lua_settop(L_, top_); }
  StackGuard(const StackGuard&) = delete;
  StackGuard& operator=(const StackGuard&) = delete;

 private:
  lua_State* L_;
  int top_;
};

std::vector<std::string> kind_names() {
  std::vector<std::string> list;
  for (Schedule::Kind kind : kKinds) list.push_back(engine::kind_name(kind));
  return list;
}

ScheduleRead failure(std::string problem) {
  ScheduleRead read;
  read.problem = std::move(problem);
  return read;
}

// `where` names the point or sample in messages: "point 2 (frames 5000000)".
std::string value_problem(const engine::FieldSchema& field, double value, bool at_start, const std::string& where) {
  engine::FieldSchema range = field;
  // After the start a value may reach an exclusive lower bound: lr decays to 0.
  if (!at_start) range.min_exclusive = false;
  const std::string problem = engine::check_value(range, engine::FieldValue(value));
  return problem.empty() ? "" : "schedule " + where + ": " + problem;
}

std::string check_values(const engine::FieldSchema& field, const Schedule& s) {
  for (size_t k = 0; k < s.points.size(); ++k) {
    const std::string where = "point " + std::to_string(k + 1) + " (" + engine::axis_name(s.axis) + " " +
                              engine::format_number(s.points[k].first) + ")";
    const std::string problem = value_problem(field, s.points[k].second, k == 0, where);
    if (!problem.empty()) return problem;
  }
  return "";
}

// Table at `table` (absolute index) -> schedule, or the problem.
ScheduleRead read_table(lua_State* L, int table) {
  const std::vector<std::string> keys(std::begin(kTableKeys), std::end(kTableKeys));
  Schedule s;
  bool has_kind = false;
  lua_pushnil(L);
  while (lua_next(L, table) != 0) {
    const std::string key = lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : "";
    if (key == "schedule") {
      const std::string kind = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : "";
      bool known = false;
      for (Schedule::Kind k : kKinds) {
        if (kind == engine::kind_name(k)) {
          s.kind = k;
          known = true;
        }
      }
      if (!known) {
        const std::string close = base::closest_name(kind, kind_names());
        return failure("schedule: expected one of " + base::join(kind_names()) + ", got " +
                       describe_value(L, -1) + (close.empty() ? "" : "; did you mean \"" + close + "\"?"));
      }
      has_kind = true;
    } else if (key == "axis") {
      const std::string axis = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : "";
      if (axis == "frames") {
        s.axis = Schedule::Axis::kFrames;
      } else if (axis == "progress") {
        s.axis = Schedule::Axis::kProgress;
      } else {
        return failure("axis: expected \"frames\" or \"progress\", got " + describe_value(L, -1));
      }
    } else if (key == "points") {
      if (!lua_istable(L, -1)) {
        return failure("points: expected a list of {x, value} pairs, got " + describe_value(L, -1));
      }
      const int list = lua_gettop(L);
      const size_t n = lua_objlen(L, list);
      if (!is_sequence(L, list)) return failure("points: expected a list of {x, value} pairs, got named or missing entries");
      for (size_t k = 1; k <= n; ++k) {
        lua_rawgeti(L, list, static_cast<int>(k));
        const bool pair = lua_istable(L, -1) && lua_objlen(L, -1) == 2;
        double xy[2] = {0, 0};
        bool numbers = pair;
        for (int j = 0; j < 2 && pair; ++j) {
          lua_rawgeti(L, -1 - j, j + 1);
          numbers = numbers && lua_type(L, -1) == LUA_TNUMBER;
          xy[j] = lua_tonumber(L, -1);
        }
        if (!numbers) return failure("points[" + std::to_string(k) + "]: expected {x, value} (two numbers)");
        lua_settop(L, list);
        s.points.emplace_back(xy[0], xy[1]);
      }
    } else {
      const std::string shown = key.empty() ? describe_value(L, -2) : "'" + key + "'";
      std::string problem = "unknown key " + shown + " in a schedule table; it takes " + base::join(keys);
      const std::string close = key.empty() ? "" : base::closest_name(key, keys);
      if (!close.empty()) problem += "; did you mean '" + close + "'?";
      return failure(problem);
    }
    lua_pop(L, 1);
  }
  if (!has_kind) {
    return failure("expected a number or a schedule (ms.linear {...}, ms.cosine {...}, ms.step {...}, "
                   "ms.piecewise {...}, ms.constant(v), a function of progress), got a table without "
                   "a `schedule` key");
  }
  ScheduleRead read;
  read.schedule = std::move(s);
  return read;
}

// Function at `function` (absolute index) sampled over progress [0, 1].
ScheduleRead sample_function(lua_State* L, int function, const engine::FieldSchema& field) {
  ScheduleRead read;
  lua_Debug info;
  lua_pushvalue(L, function);
  if (lua_getinfo(L, ">S", &info) != 0 && info.source != nullptr && info.source[0] == '@') {
    read.file = info.source + 1;
    read.line = info.linedefined;
  }
  Schedule s;
  s.kind = Schedule::Kind::kPiecewise;
  s.axis = Schedule::Axis::kProgress;
  const int top = lua_gettop(L);
  for (int k = 0; k < kFunctionSamples; ++k) {
    const double progress = static_cast<double>(k) / (kFunctionSamples - 1);
    const std::string where = "function at progress " + engine::format_number(progress);
    lua_pushvalue(L, function);
    lua_pushnumber(L, progress);
    if (lua_pcall(L, 1, 1, 0) != 0) {
      const char* message = lua_tostring(L, -1);
      read.problem = "schedule " + where + " failed: " + (message ? message : describe_value(L, -1));
      return read;
    }
    if (lua_type(L, -1) != LUA_TNUMBER) {
      read.problem = "schedule " + where + " returned " + describe_value(L, -1) + "; expected a number";
      return read;
    }
    const double value = lua_tonumber(L, -1);
    lua_settop(L, top);
    read.problem = value_problem(field, value, k == 0, where);
    if (!read.problem.empty()) return read;
    s.points.emplace_back(progress, value);
  }
  read.schedule = std::move(s);
  return read;
}

}  // namespace

bool is_schedule_value(lua_State* L, int index) {
  if (lua_isfunction(L, index)) return true;
  if (!lua_istable(L, index)) return false;
  index = absolute_index(L, index);
  lua_pushliteral(L, "schedule");
  lua_rawget(L, index);
  // A string only: a number map may hold an entry named "schedule".
  const bool tagged = lua_type(L, -1) == LUA_TSTRING;
  lua_pop(L, 1);
  return tagged;
}

ScheduleRead read_schedule(lua_State* L, int index, const engine::FieldSchema& field) {
  index = absolute_index(L, index);
  const StackGuard guard(L);
  ScheduleRead read;
  if (lua_isfunction(L, index)) {
    read = sample_function(L, index, field);
    if (!read.schedule) return read;
  } else if (lua_istable(L, index)) {
    read = read_table(L, index);
    if (!read.schedule) return read;
    read.problem = engine::schedule_problem(*read.schedule);
    if (read.problem.empty()) read.problem = check_values(field, *read.schedule);
  } else {
    read.problem = "expected a number or a schedule, got " + describe_value(L, index);
  }
  if (!read.problem.empty()) read.schedule.reset();
  return read;
}

}  // namespace moonseed::scripts
