#include "scripts/loader/config_reader.h"

#include <algorithm>
#include <cmath>

#include "base/constants.h"
#include "base/text.h"
#include "engine/config/schedule_text.h"
#include "engine/config/values.h"
#include "scripts/api/lua_api.h"
#include "scripts/state/lua_arrays.h"
#include "scripts/api/lua_dsl_list.h"
#include "scripts/api/lua_layers.h"
#include "scripts/api/lua_wrappers.h"
#include "scripts/api/lua_schedules.h"
#include "scripts/state/lua_state.h"
#include "scripts/api/shaping_function.h"

namespace moonseed::scripts {
namespace {

std::string field_path(const std::string& section, const std::string& key) {
  return section.empty() ? key : section + "." + key;
}

}  // namespace

Place ScriptReader::root_place(int index, const std::string& script) {
  if (std::optional<Place> helper = helper_place(index)) return *helper;
  Place place{script, locator_.returned_constructor(script), 0};
  if (place.anchor) place.line = locator_.line_of(*place.anchor);
  return place;
}

int ScriptReader::line_of_key(const Place& place, const std::string& key) {
  if (!place.anchor) return place.line;
  const std::optional<SourceLocator::KeyPlace> key_place = locator_.find_key(*place.anchor, key);
  return key_place ? key_place->line : place.line;
}

void ScriptReader::read_section(int index, const std::string& section, const Place& place) {
  index = absolute_index(L_, index);
  lua_pushnil(L_);
  while (lua_next(L_, index) != 0) {
    read_entry(section, place);
    lua_pop(L_, 1);
  }
}

// Key at -2, value at -1.
void ScriptReader::read_entry(const std::string& section, const Place& place) {
  if (lua_type(L_, -2) != LUA_TSTRING) {
    issue(place.file, place.line, section.empty() ? "(experiment)" : section,
          "unexpected entry with key " + describe_value(L_, -2) + "; config tables take named fields");
    return;
  }
  const std::string key = lua_tostring(L_, -2);
  const std::string path = field_path(section, key);
  std::optional<SourceLocator::KeyPlace> key_place;
  if (place.anchor) key_place = locator_.find_key(*place.anchor, key);
  const int line = key_place ? key_place->line : place.line;

  if (path == engine::kRewardShapingPath) {
    read_reward_shaping(place.file, line);
  } else if (const engine::FieldSchema* field = engine::find_field(path)) {
    Place value_place{place.file, key_place ? key_place->value : std::nullopt, line};
    read_field(*field, value_place);
  } else if (engine::is_section(path)) {
    if (!lua_istable(L_, -1)) {
      issue(place.file, line, path,
            "expected a table (section with fields " + base::join(engine::names_in(path)) + "), got " +
                describe_value(L_, -1));
      return;
    }
    Place child{place.file, std::nullopt, line};
    if (key_place && key_place->value) {
      child.anchor = key_place->value;
    } else if (std::optional<Place> helper = helper_place(-1)) {
      child = *helper;
    }
    read_section(-1, path, child);
  } else {
    issue(place.file, line, path, engine::unknown_field_problem(path));
  }
}

// Value at -1.
void ScriptReader::read_field(const engine::FieldSchema& field, const Place& place) {
  std::optional<engine::FieldValue> value;
  const int type = lua_type(L_, -1);
  if (is_schedule_value(L_, -1) ||
      (field.type == engine::FieldType::kNumber && (type == LUA_TTABLE || type == LUA_TFUNCTION))) {
    read_scheduled_field(field, place);
    return;
  }
  switch (field.type) {
    case engine::FieldType::kNumber:
      if (type == LUA_TNUMBER) value = static_cast<double>(lua_tonumber(L_, -1));
      break;
    case engine::FieldType::kInteger:
      if (type == LUA_TNUMBER) {
        value = integer_at(-1, field, field.path, place);
        if (!value) return;
      }
      break;
    case engine::FieldType::kString:
      if (type == LUA_TSTRING) value = std::string(lua_tostring(L_, -1));
      break;
    case engine::FieldType::kBool:
      if (type == LUA_TBOOLEAN) value = static_cast<bool>(lua_toboolean(L_, -1));
      break;
    case engine::FieldType::kIntegerList:
      if (type == LUA_TTABLE) {
        value = integer_list(field, place);
        if (!value) return;
      }
      break;
    case engine::FieldType::kNumberMap:
      if (type == LUA_TTABLE) {
        value = number_map(field, place);
        if (!value) return;
      }
      break;
    case engine::FieldType::kLayerList:
      if (type == LUA_TTABLE) {
        LayerListRead read = read_layer_list(L_, -1, field.path);
        if (!read.layers) return issue_found(read.file, read.line, place.file, place.line, read.field, read.problem);
        value = std::move(*read.layers);
      }
      break;
    case engine::FieldType::kWrapperList:
      if (type == LUA_TTABLE) {
        WrapperListRead read = read_wrapper_list(L_, -1, field.path);
        if (!read.wrappers) return issue_found(read.file, read.line, place.file, place.line, read.field, read.problem);
        value = std::move(*read.wrappers);
      }
      break;
  }
  if (!value) {
    issue(place.file, place.line, field.path,
          std::string("expected ") + (field.type == engine::FieldType::kInteger ? "an " : "a ") +
              engine::type_name(field.type) + ", got " + describe_value(L_, -1));
    return;
  }
  (*values_)[field.path] = Assigned{std::move(*value), place.file, place.line};
}

// Value at -1: a function, or false for none (scripts/api/shaping_function.h).
void ScriptReader::read_reward_shaping(const std::string& file, int line) {
  if (lua_type(L_, -1) == LUA_TBOOLEAN && !lua_toboolean(L_, -1)) {
    reward_shaping_ = engine::RewardShapingConfig{};
    return;
  }
  if (lua_type(L_, -1) != LUA_TFUNCTION) {
    return issue(file, line, engine::kRewardShapingPath,
                 "expected a function (or false for none), got " + describe_value(L_, -1));
  }
  ShapingRead read = read_shaping_function(L_, -1);
  if (!read.problem.empty()) {
    return issue_found(read.file, read.line, file, line, engine::kRewardShapingPath, read.problem);
  }
  reward_shaping_ = std::move(read.function);
}

// Value at -1: a schedule (engine/config/schedule.h) given to `field`.
void ScriptReader::read_scheduled_field(const engine::FieldSchema& field, Place place) {
  const std::string refusal = engine::schedule_refusal(field);
  if (!refusal.empty()) return issue(place.file, place.line, field.path, refusal + ", got " + describe_value(L_, -1));
  // A schedule built away from its key (a variable, a recipe): its helper knows the line.
  if (!place.anchor) {
    if (std::optional<Place> helper = helper_place(-1)) place = *helper;
  }
  ScheduleRead read = read_schedule(L_, -1, field);
  if (!read.schedule) return issue_found(read.file, read.line, place.file, place.line, field.path, read.problem);
  const double start = read.schedule->at(0);
  (*values_)[field.path] = Assigned{start, place.file, place.line, std::move(read.schedule)};
}

// A number at `index` that must be an integer; nullopt after reporting.
std::optional<engine::FieldValue> ScriptReader::integer_at(int index, const engine::FieldSchema& field,
                                                           const std::string& name, const Place& place) {
  const double d = lua_tonumber(L_, index);
  if (d != std::floor(d)) {
    issue(place.file, place.line, name, "expected an integer, got " + describe_value(L_, index));
    return std::nullopt;
  }
  if (!(std::fabs(d) <= base::kMaxExactInteger)) {
    issue(place.file, place.line, name,
          "expected an integer in " + engine::range_text(field) + ", got " + engine::format_number(d));
    return std::nullopt;
  }
  return engine::FieldValue(static_cast<int64_t>(d));
}

// The table at the top: {64, 64}; nullopt after reporting.
std::optional<engine::FieldValue> ScriptReader::integer_list(const engine::FieldSchema& field, const Place& place) {
  const int table = lua_gettop(L_);
  const size_t n = lua_objlen(L_, table);
  if (!is_sequence(L_, table)) {
    issue(place.file, place.line, field.path,
          "expected a list of integers like {64, 64}, got a table with named or missing entries");
    return std::nullopt;
  }
  std::vector<int64_t> list;
  for (size_t k = 1; k <= n; ++k) {
    lua_rawgeti(L_, table, static_cast<int>(k));
    const std::string name = field.path + "[" + std::to_string(k) + "]";
    std::optional<engine::FieldValue> element;
    if (lua_type(L_, -1) == LUA_TNUMBER) {
      element = integer_at(-1, field, name, place);
    } else {
      issue(place.file, place.line, name, "expected an integer, got " + describe_value(L_, -1));
    }
    lua_pop(L_, 1);
    if (!element) return std::nullopt;
    list.push_back(std::get<int64_t>(*element));
  }
  return engine::FieldValue(std::move(list));
}

// The table at the top: {max_episode_steps = 200}, sorted by name; nullopt
// after reporting every bad entry.
std::optional<engine::FieldValue> ScriptReader::number_map(const engine::FieldSchema& field, const Place& place) {
  const int table = lua_gettop(L_);
  engine::NumberMap map;
  bool ok = true;
  lua_pushnil(L_);
  while (lua_next(L_, table) != 0) {
    if (lua_type(L_, -2) != LUA_TSTRING) {
      issue(place.file, place.line, field.path,
            "expected a map of numbers like {max_episode_steps = 200}, got key " + describe_value(L_, -2));
      ok = false;
    } else {
      const std::string key = lua_tostring(L_, -2);
      const int line = line_of_key(place, key);
      if (lua_type(L_, -1) == LUA_TNUMBER) {
        map.emplace_back(key, lua_tonumber(L_, -1));
      } else {
        issue(place.file, line, field.path + "." + key, "expected a number, got " + describe_value(L_, -1));
        ok = false;
      }
    }
    lua_pop(L_, 1);
  }
  if (!ok) return std::nullopt;
  std::sort(map.begin(), map.end());
  return engine::FieldValue(std::move(map));
}

// The place recorded by a DSL helper (ms.origin), if the table was built by one.
std::optional<Place> ScriptReader::helper_place(int index) {
  const std::optional<DslOrigin> origin = dsl_origin(L_, index);
  if (!origin) return std::nullopt;
  return Place{origin->file, locator_.constructor_at_line(origin->file, origin->line), origin->line};
}

void ScriptReader::issue(const std::string& file, int line, const std::string& field, const std::string& message) {
  issues_->push_back(ConfigIssue{file, line, field, message});
}

void ScriptReader::issue_found(const std::string& found_file, int found_line, const std::string& file, int line,
                               const std::string& field, const std::string& message) {
  if (found_file.empty()) return issue(file, line, field, message);
  issue(found_file, found_line, field, message);
}

}  // namespace moonseed::scripts
