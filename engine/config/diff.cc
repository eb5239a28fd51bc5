#include "engine/config/diff.h"

#include "base/text.h"
#include "engine/config/schedule.h"
#include "engine/config/schedule_text.h"
#include "engine/config/values.h"

namespace moonseed::engine {
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
    out += (k ? ", " : "") + base::json_quote(c.path) + ": {\"from\": " + c.before_json +
           ", \"to\": " + c.after_json + ", \"reload\": \"" + reload_name(c.reload) + "\"}";
  }
  return out + "}";
}

ConfigDiff diff_configs(const ExperimentConfig& running, const ExperimentConfig& loaded) {
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
      change.before_json = was ? base::json_quote(change.before) : "null";
      change.after_json = is ? base::json_quote(change.after) : "null";
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
      const Schedule* was = find_schedule(running, path);
      const Schedule* is = find_schedule(loaded, path);
      change.before = was ? schedule_text(*was) : lua_literal(before);
      change.after = is ? schedule_text(*is) : lua_literal(after);
      change.before_json = was ? base::json_quote(change.before) : json_value(before);
      change.after_json = is ? base::json_quote(change.after) : json_value(after);
    }
    diff.changes.push_back(std::move(change));
  }
  return diff;
}

}  // namespace moonseed::engine
