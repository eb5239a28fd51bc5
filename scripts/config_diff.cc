#include "scripts/config_diff.h"

#include <cmath>

#include "engine/metrics_log.h"
#include "engine/schedule.h"
#include "scripts/config_layers.h"
#include "scripts/config_schedules.h"
#include "scripts/config_values.h"

namespace moonseed::scripts {
namespace {

std::string json_number(double v) { return std::isfinite(v) ? format_number(v) : "null"; }

}  // namespace

std::string json_value(const FieldValue& value) {
  if (const double* d = std::get_if<double>(&value)) return json_number(*d);
  if (const int64_t* i = std::get_if<int64_t>(&value)) return std::to_string(*i);
  if (const std::string* s = std::get_if<std::string>(&value)) return engine::json_quote(*s);
  if (const bool* b = std::get_if<bool>(&value)) return *b ? "true" : "false";
  if (const auto* list = std::get_if<std::vector<int64_t>>(&value)) {
    std::string out = "[";
    for (size_t k = 0; k < list->size(); ++k) out += (k ? ", " : "") + std::to_string((*list)[k]);
    return out + "]";
  }
  if (const auto* layers = std::get_if<LayerList>(&value)) return layer_list_json(*layers);
  const NumberMap& map = std::get<NumberMap>(value);
  std::string out = "{";
  for (size_t k = 0; k < map.size(); ++k) {
    out += (k ? ", " : "") + engine::json_quote(map[k].first) + ": " + json_number(map[k].second);
  }
  return out + "}";
}

std::vector<std::string> ConfigDiff::refused() const {
  std::vector<std::string> out;
  for (const FieldChange& c : changes) {
    if (c.reload == ReloadClass::kRestart) out.push_back(c.path);
  }
  return out;
}

std::string ConfigDiff::summary() const {
  std::string out;
  for (const FieldChange& c : changes) {
    out += (out.empty() ? "" : ", ") + c.path + " " + c.before + " -> " + c.after;
  }
  return out;
}

std::string ConfigDiff::to_json() const {
  std::string out = "{";
  for (size_t k = 0; k < changes.size(); ++k) {
    const FieldChange& c = changes[k];
    out += (k ? ", " : "") + engine::json_quote(c.path) + ": {\"from\": " + c.before_json +
           ", \"to\": " + c.after_json + ", \"reload\": \"" + reload_name(c.reload) + "\"}";
  }
  return out + "}";
}

ConfigDiff diff_configs(const engine::ExperimentConfig& running, const engine::ExperimentConfig& loaded) {
  ConfigDiff diff;
  for (const std::string& path : changed_fields(running, loaded)) {
    const FieldSchema* field = find_field(path);
    FieldChange change;
    change.path = path;
    if (path == kRewardShapingPath) {
      // A function: its text is no value to print.
      const bool was = !running.reward_shaping.source.empty();
      const bool is = !loaded.reward_shaping.source.empty();
      change.reload = kRewardShapingReload;
      change.before = was ? "(function)" : "nil";
      change.after = !is ? "nil" : was ? "(function changed)" : "(function)";
      change.before_json = was ? engine::json_quote(change.before) : "null";
      change.after_json = is ? engine::json_quote(change.after) : "null";
    } else if (field == nullptr) {
      // Not a plain field (e.g. a schedule): hot by construction of the caller's schema.
      change.reload = ReloadClass::kHot;
      change.before = change.after = "(changed)";
      change.before_json = change.after_json = "null";
    } else {
      const FieldValue before = field->get(running);
      const FieldValue after = field->get(loaded);
      change.reload = field->reload;
      // A schedule shows as what it does; its plain value (the value at 0) may not have changed.
      const engine::Schedule* was = engine::find_schedule(running, path);
      const engine::Schedule* is = engine::find_schedule(loaded, path);
      change.before = was ? schedule_text(*was) : lua_literal(before);
      change.after = is ? schedule_text(*is) : lua_literal(after);
      change.before_json = was ? engine::json_quote(change.before) : json_value(before);
      change.after_json = is ? engine::json_quote(change.after) : json_value(after);
    }
    diff.changes.push_back(std::move(change));
  }
  return diff;
}

}  // namespace moonseed::scripts
