#include "scripts/config_overrides.h"

#include <stdexcept>

#include "base/text.h"
#include "engine/config/values.h"

namespace moonseed::scripts {

void apply_override(const std::string& text, AssignedFields* values, std::vector<ConfigIssue>* issues) {
  const size_t eq = text.find('=');
  const std::string path = text.substr(0, std::min(eq, text.size()));
  auto fail = [&](const std::string& field, const std::string& message) {
    issues->push_back(ConfigIssue{kCommandLine, 0, field, message + " (in override '" + text + "')"});
  };
  if (eq == std::string::npos || path.empty()) return fail(text, "expected FIELD=VALUE");
  if (path == engine::kRewardShapingPath) return fail(path, "is a Lua function: set it in the script");
  const std::string value_text = text.substr(eq + 1);
  try {
    if (const engine::FieldSchema* field = engine::find_field(path)) {
      (*values)[path] = Assigned{engine::parse_value(*field, value_text), kCommandLine, 0};
      return;
    }
    // "env.options.NAME=VALUE": one entry of a map field, merged into its value.
    const size_t dot = path.rfind('.');
    const engine::FieldSchema* map = dot == std::string::npos ? nullptr : engine::find_field(path.substr(0, dot));
    if (map != nullptr && map->type == engine::FieldType::kNumberMap) {
      // The map's own parser checks the name and the number.
      const engine::FieldValue entry = engine::parse_value(*map, path.substr(dot + 1) + "=" + value_text);
      const engine::NumberMap& set = std::get<engine::NumberMap>(entry);
      if (set.size() != 1) return fail(path, "expected one number, got '" + value_text + "'");
      const Assigned* earlier = find_assigned(*values, map->path);
      const engine::FieldValue current = earlier != nullptr ? earlier->value : map->get(engine::ExperimentConfig{});
      (*values)[map->path] = Assigned{merged_by_key(std::get<engine::NumberMap>(current), set), kCommandLine, 0};
      return;
    }
  } catch (const std::invalid_argument& e) {
    return fail(path, e.what());
  }
  if (engine::is_section(path)) {
    return fail(path, "is a section; set one of its fields: " + base::join(engine::names_in(path)));
  }
  const std::string suggestion = engine::did_you_mean(path);
  fail(path, suggestion.empty() ? "unknown field" : "unknown field; did you mean '" + suggestion + "'?");
}

}  // namespace moonseed::scripts
