// The schema of an experiment: one entry per field of ExperimentConfig
// (engine/config/experiment_config.h), with its dotted path, type, range or allowed values,
// default, reload class and a one-line doc. Everything that reads, writes,
// checks, diffs or documents a config goes through this table, so a field
// exists in all of those places or in none.
//
// Immutable after first use; thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "engine/config/experiment_config.h"
#include "envs/wrappers/wrapper_spec.h"
#include "models/model_spec.h"

namespace moonseed::engine {

enum class FieldType { kNumber, kInteger, kString, kBool, kIntegerList, kNumberMap, kLayerList, kWrapperList };

// How a running experiment takes a new value (ARCHITECTURE.md "Hot reload").
enum class ReloadClass {
  kHot,       // applied at the next training-step boundary
  kBoundary,  // applied by actors at the next unroll boundary
  kRestart,   // a reload that changes it is refused, naming the field
};

using NumberMap = std::vector<std::pair<std::string, double>>;  // sorted by name
using LayerList = models::LayerList;
using WrapperList = envs::WrapperList;
using FieldValue =
    std::variant<double, int64_t, std::string, bool, std::vector<int64_t>, NumberMap, LayerList, WrapperList>;

struct FieldSchema {
  std::string path;  // "optimizer.lr"
  FieldType type = FieldType::kNumber;
  // Numbers and integers, list elements, map values: the allowed interval.
  double min = 0;
  double max = 0;
  bool min_exclusive = false;
  std::vector<std::string> allowed;  // strings: the allowed values; empty = any
  ReloadClass reload = ReloadClass::kRestart;
  std::string doc;
  // Optional extra rule, documented by rule_doc: "" when a value is fine,
  // else what is expected.
  std::string rule_doc;
  std::function<std::string(const FieldValue&)> rule;
  std::function<FieldValue(const ExperimentConfig&)> get;
  std::function<void(ExperimentConfig&, const FieldValue&)> set;
  // Number fields only: the member itself, so that schedules (schedule.h)
  // move it along without going through FieldValue. Empty for other types.
  std::function<double*(ExperimentConfig&)> number;
};

// `reward_shaping` (RewardShapingConfig) is a Lua function, which no
// FieldType holds, so it has no FieldSchema: the loader reads it
// (scripts/api/shaping_function.h), to_lua writes it back, changed_fields reports
// it under this path when its text changes, and docs/config.md lists it.
inline constexpr const char* kRewardShapingPath = "reward_shaping";
inline constexpr ReloadClass kRewardShapingReload = ReloadClass::kBoundary;

// Every field, in the order of engine/config/experiment_config.h.
const std::vector<FieldSchema>& config_schema();
// nullptr when `path` names no field.
const FieldSchema* find_field(const std::string& path);
// True for "optimizer", "env", ...: a prefix of some field path.
bool is_section(const std::string& path);
// Leaf names of the fields and sections directly inside `section` ("" = top level).
std::vector<std::string> names_in(const std::string& section);
// The known field or section path closest to an unknown one ("optimizer.lrr"
// -> "optimizer.lr", "lr" -> "optimizer.lr"), or "" when nothing is close.
// Names other libraries give a field count as close too ("optimizer.learning_rate" -> "optimizer.lr").
std::string did_you_mean(const std::string& unknown_path);
// What is wrong with an unknown field path, for a script and a command-line
// override alike: "unknown field; did you mean 'optimizer.lr'?", else
// "unknown field; optimizer has: kind, lr, ..." (or the experiment's sections
// when the section itself is unknown).
std::string unknown_field_problem(const std::string& unknown_path);

const char* type_name(FieldType type);
const char* reload_name(ReloadClass reload);

// Paths of the fields whose values differ (what a hot reload diffs), including
// fields whose schedule (engine/config/schedule.h) differs or is given or removed,
// then kRewardShapingPath when the shaping function's text differs (where it
// was written is not compared: a config.lua written by to_lua holds the same
// function at another place).
std::vector<std::string> changed_fields(const ExperimentConfig& a,
                                        const ExperimentConfig& b);

// Copies every field of reload class `reload` from `from` to `to`; for kHot
// also the schedules, which only hot fields follow. This is how a training
// thread takes a hot reload: one rule, the schema's, for what is hot.
void copy_fields(const ExperimentConfig& from, ExperimentConfig& to, ReloadClass reload);

// docs/config.md: one row per field (field, type, default, range, reload, doc).
// Regenerate the file with `cmake --build BUILD --target config_docs`.
std::string schema_markdown();

}  // namespace moonseed::engine
