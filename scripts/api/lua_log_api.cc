// core.log (declared in lua_api.h): experience logs read from Lua, over
// explog/reader.h. docs/experience-log.md "Reading experience logs from
// Lua" is the user guide.
//
//   log.open(path)        -> Log (userdata "moonseed.ExperienceLog"); path is a run directory
//                            (its log is RUN_DIR/experience/), a log directory or one segment file
//   log:info()            -> {path, run_id, spec, codec, records, segments, chunks,
//                             columns = {{name, dtype, shape}, ...}, problems = {text, ...}}
//   log:episodes([filter]) -> iterator of {id, actor, env, steps, first_step, return, first, last,
//                             terminated, truncated, start_ns, end_ns}, in order of first appearance
//   log:steps([filter])   -> iterator of {episode, actor, env, t, first, last, learner_step,
//                             wall_ns, <column> = number or flat array, ...}, in log order
//   log:problems()        -> {text, ...}
//   log:close()           (also on garbage collection)
// filter: {episode, actor, since, until} (both), {limit, columns} (steps only).
//
// Contract: episodes() reads every record that passes the filter once (chunks
// the index rules out are never read) and keeps one small table per episode;
// steps() streams through a RecordCursor, one decoded chunk at a time, and
// stops reading at `limit`. Of each chunk read, only the meta and "reward"
// (episodes) or the columns asked for (steps) are decompressed; its whole
// data is still read and checked against its checksum. An episode is
// explog/episodes.h's EpisodeSummary (as `moonseed log ls`): first/last
// say a record with is_first/is_last is in the log, terminated/truncated are
// the is_last record's flags, and its return is the sum of the column named
// "reward" over its steps in the log (nil without such a column). A column named like a
// step field (episode, actor, env, t, first, last, learner_step, wall_ns)
// replaces that field in the step table.
// Numbers: every value is a Lua number (a double): exact for u8, i32, f32, f64
// and for integers up to 2^53; an i64 beyond (wall times in ns are ~1.7e18)
// is rounded to the nearest double. `since`/`until` compare the wall time as
// that double, so a start_ns/end_ns handed back as a bound includes its record.
//
// Errors are Lua errors naming the function and the offending value: a path
// that holds no log, a filter of the wrong type or out of range, an unknown
// filter field or column name, a closed log. A chunk that cannot be decoded
// is skipped, not an error: its message joins log:problems() (and info()),
// next to what was found at open (a torn tail, a skipped segment).
//
// Ownership: an iterator keeps its Log alive; log:close() closes the files
// at once, after which the Log and its iterators raise errors.
// Thread-safety: one Lua state, one thread, as all of moonseed.core.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <memory>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "base/text.h"
#include "explog/episodes.h"
#include "explog/reader.h"
#include "engine/config/values.h"
#include "scripts/api/lua_api.h"
#include "scripts/state/lua_arrays.h"
#include "scripts/api/lua_log_filter.h"
#include "scripts/state/lua_state.h"

namespace moonseed::scripts {
namespace {

namespace ex = explog;
namespace fs = std::filesystem;

constexpr const char* kLogMetatable = "moonseed.ExperienceLog";
constexpr const char* kStepsMetatable = "moonseed.ExperienceLogSteps";

// The userdata behind a Log.
struct LuaLog {
  std::string path;                       // where the log is (RUN_DIR resolved)
  std::unique_ptr<ex::LogReader> reader;  // null once closed
  std::vector<std::string> problems;      // found at open, then chunks skipped; no repeats
};

// The state of one steps() iteration (userdata: it owns C++ objects).
struct StepsState {
  std::optional<ex::RecordCursor> cursor;  // reset at the end
  size_t problems_taken = 0;               // of cursor->problems(), already in the log's list
  std::vector<size_t> columns;             // schema indices to push, in the order asked
  std::optional<ex::Record> record;        // the record being stepped through
  int32_t next_t = 0;                      // its next step
  int64_t left = 0;                        // steps the limit still allows
};

// ---- the Log ----

void add_problems(LuaLog* log, const std::vector<ex::LogProblem>& found, size_t from) {
  for (size_t i = from; i < found.size(); ++i) {
    bool seen = false;
    for (const std::string& p : log->problems) seen = seen || p == found[i].message;
    if (!seen) log->problems.push_back(found[i].message);
  }
}

LuaLog* check_log(lua_State* L, const char* method) {
  LuaLog* log = static_cast<LuaLog*>(luaL_checkudata(L, 1, kLogMetatable));
  if (!log->reader) luaL_error(L, "log:%s(): the log %s is closed", method, log->path.c_str());
  return log;
}

// Where the log of `path` is: RUN_DIR/experience when there is one, else `path` itself.
std::string log_location(const std::string& path) {
  std::error_code ec;
  const fs::path experience = fs::path(path) / "experience";
  if (fs::is_directory(experience, ec)) return experience.string();
  if (!fs::exists(path, ec)) throw std::runtime_error("log.open: " + path + " does not exist");
  return path;
}

int log_open(lua_State* L) {
  const std::string path = luaL_checkstring(L, 1);
  const std::string location = log_location(path);
  std::unique_ptr<ex::LogReader> reader;
  try {
    reader = std::make_unique<ex::LogReader>(location);
  } catch (const std::exception& e) {
    throw std::runtime_error(std::string("log.open: ") + e.what());
  }
  void* memory = lua_newuserdata(L, sizeof(LuaLog));
  LuaLog* log = new (memory) LuaLog();
  luaL_getmetatable(L, kLogMetatable);
  lua_setmetatable(L, -2);
  log->path = location;
  add_problems(log, reader->problems(), 0);
  log->reader = std::move(reader);
  return 1;
}

void push_string_list(lua_State* L, const std::vector<std::string>& list) {
  lua_createtable(L, static_cast<int>(list.size()), 0);
  for (size_t i = 0; i < list.size(); ++i) {
    lua_pushlstring(L, list[i].data(), list[i].size());
    lua_rawseti(L, -2, static_cast<int>(i + 1));
  }
}

int log_info(lua_State* L) {
  const LuaLog* log = check_log(L, "info");
  const ex::LogReader& reader = *log->reader;
  const ex::LogSchema& schema = reader.schema();
  lua_createtable(L, 0, 10);
  lua_pushlstring(L, log->path.data(), log->path.size());
  lua_setfield(L, -2, "path");
  lua_pushlstring(L, schema.run_id.data(), schema.run_id.size());
  lua_setfield(L, -2, "run_id");
  lua_pushlstring(L, schema.spec.data(), schema.spec.size());
  lua_setfield(L, -2, "spec");
  lua_pushlstring(L, schema.codec.data(), schema.codec.size());
  lua_setfield(L, -2, "codec");
  lua_pushnumber(L, static_cast<lua_Number>(reader.record_count()));
  lua_setfield(L, -2, "records");
  lua_pushnumber(L, static_cast<lua_Number>(reader.segments().size()));
  lua_setfield(L, -2, "segments");
  lua_pushnumber(L, static_cast<lua_Number>(reader.chunks().size()));
  lua_setfield(L, -2, "chunks");
  lua_createtable(L, static_cast<int>(schema.columns.size()), 0);
  for (size_t i = 0; i < schema.columns.size(); ++i) {
    const ex::ColumnSpec& c = schema.columns[i];
    lua_createtable(L, 0, 3);
    lua_pushlstring(L, c.name.data(), c.name.size());
    lua_setfield(L, -2, "name");
    lua_pushstring(L, ex::dtype_name(c.dtype));
    lua_setfield(L, -2, "dtype");
    push_number_array(L, c.shape.data(), c.shape.size());
    lua_setfield(L, -2, "shape");
    lua_rawseti(L, -2, static_cast<int>(i + 1));
  }
  lua_setfield(L, -2, "columns");
  push_string_list(L, log->problems);
  lua_setfield(L, -2, "problems");
  return 1;
}

int log_problems(lua_State* L) {
  push_string_list(L, check_log(L, "problems")->problems);
  return 1;
}

int log_close(lua_State* L) {
  static_cast<LuaLog*>(luaL_checkudata(L, 1, kLogMetatable))->reader.reset();
  return 0;
}

int log_gc(lua_State* L) {
  static_cast<LuaLog*>(luaL_checkudata(L, 1, kLogMetatable))->~LuaLog();
  return 0;
}

int log_tostring(lua_State* L) {
  const LuaLog* log = static_cast<LuaLog*>(luaL_checkudata(L, 1, kLogMetatable));
  lua_pushfstring(L, "moonseed.ExperienceLog(%s%s)", log->path.c_str(), log->reader ? "" : ", closed");
  return 1;
}

// ---- values ----

// One step of `column` (column.step_bytes() bytes at `p`): a number for a
// scalar column, a flat array otherwise.
void push_step_value(lua_State* L, const ex::ColumnSpec& column, const uint8_t* p) {
  const size_t size = ex::dtype_size(column.dtype);
  if (column.shape.empty()) {
    lua_pushnumber(L, ex::value_as_double(column.dtype, p));
    return;
  }
  const size_t n = column.step_bytes() / size;
  lua_createtable(L, static_cast<int>(n), 0);
  for (size_t i = 0; i < n; ++i) {
    lua_pushnumber(L, ex::value_as_double(column.dtype, p + i * size));
    lua_rawseti(L, -2, static_cast<int>(i + 1));
  }
}

void set_number(lua_State* L, const char* key, double value) {
  lua_pushnumber(L, value);
  lua_setfield(L, -2, key);
}

void set_boolean(lua_State* L, const char* key, bool value) {
  lua_pushboolean(L, value);
  lua_setfield(L, -2, key);
}

// ---- episodes ----

void push_episode(lua_State* L, const ex::EpisodeSummary& e, bool has_reward) {
  lua_createtable(L, 0, 12);
  set_number(L, "id", static_cast<double>(e.episode_id));
  set_number(L, "actor", e.actor_id);
  set_number(L, "env", e.env_id);
  set_number(L, "steps", static_cast<double>(e.steps));
  set_number(L, "first_step", static_cast<double>(e.first_step));
  if (has_reward) {
    set_number(L, "return", e.env_return);  // the env's own, as `moonseed log ls` shows it
    set_number(L, "shaped_return", e.total_reward);
  }
  set_boolean(L, "first", e.has_first);
  set_boolean(L, "last", e.last_flags & ex::kIsLast);
  set_boolean(L, "terminated", e.last_flags & ex::kTerminated);
  set_boolean(L, "truncated", e.last_flags & ex::kTruncated);
  set_number(L, "start_ns", static_cast<double>(e.first_wall_time_ns));
  set_number(L, "end_ns", static_cast<double>(e.last_wall_time_ns));
}

// Upvalues: the array of episode tables, the next index.
int episodes_next(lua_State* L) {
  const int i = static_cast<int>(lua_tointeger(L, lua_upvalueindex(2)));
  lua_rawgeti(L, lua_upvalueindex(1), i);
  if (lua_isnil(L, -1)) return 1;
  lua_pushinteger(L, i + 1);
  lua_replace(L, lua_upvalueindex(2));
  return 1;
}

int log_episodes(lua_State* L) {
  LuaLog* log = check_log(L, "episodes");
  const ex::LogReader& reader = *log->reader;
  const ex::LogSchema& schema = reader.schema();
  const LogReadOptions options = check_log_filter(L, 2, "log:episodes", false, schema);
  std::vector<ex::LogProblem> unreadable;
  const std::vector<ex::EpisodeSummary> episodes =
      ex::summarize_episodes(reader, options.filter, &unreadable);
  add_problems(log, unreadable, 0);
  const bool has_reward = ex::reward_column(schema).has_value();

  lua_createtable(L, static_cast<int>(episodes.size()), 0);
  for (size_t i = 0; i < episodes.size(); ++i) {
    push_episode(L, episodes[i], has_reward);
    lua_rawseti(L, -2, static_cast<int>(i + 1));
  }
  lua_pushinteger(L, 1);
  lua_pushcclosure(L, episodes_next, 2);
  return 1;
}

// ---- steps ----

void push_step(lua_State* L, const ex::LogSchema& schema, const StepsState& s) {
  const ex::Record& r = *s.record;
  const ex::RecordMeta& m = r.meta;
  const int32_t t = s.next_t;
  lua_createtable(L, 0, static_cast<int>(8 + s.columns.size()));
  set_number(L, "episode", static_cast<double>(m.episode_id));
  set_number(L, "actor", m.actor_id);
  set_number(L, "env", m.env_id);
  set_number(L, "t", static_cast<double>(m.first_step + t));
  set_boolean(L, "first", (m.flags & ex::kIsFirst) && t == 0);
  set_boolean(L, "last", (m.flags & ex::kIsLast) && t == m.steps - 1);
  set_number(L, "learner_step", static_cast<double>(m.learner_step));
  set_number(L, "wall_ns", static_cast<double>(m.wall_time_ns));
  for (const size_t c : s.columns) {
    const ex::ColumnSpec& column = schema.columns[c];
    lua_pushlstring(L, column.name.data(), column.name.size());
    push_step_value(L, column, r.columns[c].data() + static_cast<size_t>(t) * column.step_bytes());
    lua_rawset(L, -3);
  }
}

// Upvalues: the StepsState userdata, the Log userdata (which it keeps alive).
int steps_next(lua_State* L) {
  StepsState* s = static_cast<StepsState*>(lua_touserdata(L, lua_upvalueindex(1)));
  LuaLog* log = static_cast<LuaLog*>(lua_touserdata(L, lua_upvalueindex(2)));
  if (!s->cursor) return 0;
  if (!log->reader) return luaL_error(L, "log:steps(): the log %s is closed", log->path.c_str());
  while (s->left > 0 && (!s->record || s->next_t >= s->record->meta.steps)) {
    s->record = s->cursor->next();
    s->next_t = 0;
    add_problems(log, s->cursor->problems(), s->problems_taken);
    s->problems_taken = s->cursor->problems().size();
    if (!s->record) break;
  }
  if (s->left <= 0 || !s->record) {
    s->record.reset();
    s->cursor.reset();
    return 0;
  }
  push_step(L, log->reader->schema(), *s);
  ++s->next_t;
  --s->left;
  return 1;
}

int steps_gc(lua_State* L) {
  static_cast<StepsState*>(luaL_checkudata(L, 1, kStepsMetatable))->~StepsState();
  return 0;
}

int log_steps(lua_State* L) {
  LuaLog* log = check_log(L, "steps");
  const ex::LogSchema& schema = log->reader->schema();
  LogReadOptions options = check_log_filter(L, 2, "log:steps", true, schema);
  void* memory = lua_newuserdata(L, sizeof(StepsState));
  StepsState* s = new (memory) StepsState();
  luaL_getmetatable(L, kStepsMetatable);
  lua_setmetatable(L, -2);
  std::vector<bool> decode;  // empty: every column
  if (options.columns) {
    s->columns = std::move(*options.columns);
    decode.assign(schema.columns.size(), false);
    for (const size_t c : s->columns) decode[c] = true;
  } else {
    for (size_t c = 0; c < schema.columns.size(); ++c) s->columns.push_back(c);
  }
  s->left = options.limit;
  // No chunk is read before the first step is asked for (and none with limit 0).
  if (s->left > 0) s->cursor.emplace(log->reader->scan(options.filter, std::move(decode)));
  lua_pushvalue(L, 1);
  lua_pushcclosure(L, cpp_function<steps_next>, 2);
  return 1;
}

const luaL_Reg kLogMethods[] = {
    {"info", cpp_function<log_info>},
    {"episodes", cpp_function<log_episodes>},
    {"steps", cpp_function<log_steps>},
    {"problems", cpp_function<log_problems>},
    {"close", cpp_function<log_close>},
    {nullptr, nullptr},
};

const luaL_Reg kFunctions[] = {
    {"open", cpp_function<log_open>},
    {nullptr, nullptr},
};

}  // namespace

void push_log_api(lua_State* L) {
  if (luaL_newmetatable(L, kLogMetatable)) {
    lua_newtable(L);
    luaL_register(L, nullptr, kLogMethods);
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, log_gc);
    lua_setfield(L, -2, "__gc");
    lua_pushcfunction(L, log_tostring);
    lua_setfield(L, -2, "__tostring");
  }
  lua_pop(L, 1);
  if (luaL_newmetatable(L, kStepsMetatable)) {
    lua_pushcfunction(L, steps_gc);
    lua_setfield(L, -2, "__gc");
  }
  lua_pop(L, 1);
  lua_newtable(L);
  luaL_register(L, nullptr, kFunctions);
}

}  // namespace moonseed::scripts
