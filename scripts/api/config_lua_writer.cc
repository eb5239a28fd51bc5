#include "scripts/api/config_lua_writer.h"

#include <stdexcept>

#include "base/text.h"
#include "engine/config/schedule_text.h"
#include "engine/config/schema.h"

namespace moonseed::scripts {

std::string to_lua(const engine::ExperimentConfig& config) {
  std::string out =
      "-- Resolved configuration of experiment " + base::lua_quote(config.name) + ", written by moonseed.\n"
      "-- Every field is explicit; `moonseed run --resume` reads it back.\n"
      "return {\n";
  for (const std::string& name : engine::names_in("")) {
    if (const engine::FieldSchema* f = engine::find_field(name)) {
      out += "  " + name + " = " + engine::field_literal(*f, config) + ",\n";
      continue;
    }
    out += "  " + name + " = {\n";
    for (const std::string& leaf : engine::names_in(name)) {
      const engine::FieldSchema* f = engine::find_field(name + "." + leaf);
      if (f == nullptr) throw std::logic_error("to_lua: sections nest one level at most: " + name + "." + leaf);
      out += "    " + leaf + " = " + engine::field_literal(*f, config) + ",\n";
    }
    out += "  },\n";
  }
  // The function's own text; read back, errors name config.lua and its lines there.
  const std::string& shaping = config.reward_shaping.source;
  out += std::string("  ") + engine::kRewardShapingPath + " = " + (shaping.empty() ? "false" : shaping) + ",\n";
  return out + "}\n";
}

}  // namespace moonseed::scripts
