// Reads an experiment table (the script's or a recipe's) into field values,
// each with the file:line where it was written: the first step of loading
// (experiment_loader.h). Every key is checked against the schema
// (engine/config/schema.h): unknown keys ("did you mean"), wrong types and
// malformed lists, maps, layers and schedules become ConfigIssues, collected
// so that one read reports them all. Ranges are checked later, on the merged
// values. `reward_shaping` is read apart: it is a function, not a field.
//
// Lines come from SourceLocator (source_locator.h) and from the places the
// DSL helpers record (ms.origin, lua_api.h); a key the text does not show
// falls back to its table's line.
//
// Owns nothing but its SourceLocator cache; the lua_State, the issues and the
// values belong to the caller and must outlive the reader. Reading leaves the
// Lua stack as it found it; Lua errors (out of memory) propagate.
// Not thread-safe: one reader per load, on the thread that owns the state.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <lua.hpp>

#include "engine/config/experiment_config.h"
#include "scripts/loader/assigned_fields.h"
#include "scripts/api/config_error.h"
#include "scripts/api/source_locator.h"

namespace moonseed::scripts {

// Where a table was written: its file, its constructor when known, and the
// line to blame when a key cannot be found in the text.
struct Place {
  std::string file;
  std::optional<SourceLocator::Anchor> anchor;
  int line = 0;
};

class ScriptReader {
 public:
  ScriptReader(lua_State* L, std::vector<ConfigIssue>* issues, AssignedFields* values)
      : L_(L), issues_(issues), values_(values) {}

  lua_State* state() const { return L_; }

  // Where the table at `index`, returned by `script`, was written: the place
  // its helper recorded, else the script's top-level `return {`.
  Place root_place(int index, const std::string& script);

  // Line where `key` of the table at `place` was written; the table's line
  // when the text does not show it.
  int line_of_key(const Place& place, const std::string& key);

  // Reads the fields of the table at `index`, inside `section` ("" = the
  // experiment), into the values: each field read replaces the value it had.
  void read_section(int index, const std::string& section, const Place& place);

  // The last reward_shaping read; an empty config for `false`.
  const std::optional<engine::RewardShapingConfig>& reward_shaping() const { return reward_shaping_; }

 private:
  void read_entry(const std::string& section, const Place& place);
  void read_field(const engine::FieldSchema& field, const Place& place);
  void read_reward_shaping(const std::string& file, int line);
  void read_scheduled_field(const engine::FieldSchema& field, Place place);
  std::optional<engine::FieldValue> integer_at(int index, const engine::FieldSchema& field, const std::string& name,
                                               const Place& place);
  std::optional<engine::FieldValue> integer_list(const engine::FieldSchema& field, const Place& place);
  std::optional<engine::FieldValue> number_map(const engine::FieldSchema& field, const Place& place);
  std::optional<Place> helper_place(int index);
  void issue(const std::string& file, int line, const std::string& field, const std::string& message);
  // A problem a helper reader found (layers, schedule, shaping function): at
  // the place it names when it knows one (a helper records its own line),
  // else at `file`:`line`.
  void issue_found(const std::string& found_file, int found_line, const std::string& file, int line,
                   const std::string& field, const std::string& message);

  lua_State* L_;
  SourceLocator locator_;
  std::vector<ConfigIssue>* issues_;
  AssignedFields* values_;
  std::optional<engine::RewardShapingConfig> reward_shaping_;
};

}  // namespace moonseed::scripts
