// docs/config.md from the schema (schema.h schema_markdown): the page's text and one row per field.
#include <string>

#include "engine/config/experiment_config.h"
#include "engine/config/schema.h"
#include "engine/config/values.h"

namespace moonseed::engine {

std::string schema_markdown() {
  const ExperimentConfig defaults;
  std::string md =
      "# Experiment configuration\n"
      "\n"
      "<!-- Generated from engine/config/schema.cc: `cmake --build BUILD --target config_docs`.\n"
      "     scripts_test fails while this file differs from the schema. -->\n"
      "\n"
      "An experiment script returns a table with these fields (`ms.experiment { ... }`\n"
      "from `require \"moonseed\"`, or a plain table). Every field is optional and takes the\n"
      "default below; an unknown field, a value of the wrong type or out of range is an\n"
      "error naming `file:line` and the field, before anything starts. On the command line,\n"
      "`moonseed run SCRIPT optimizer.lr=3e-4 topology.actors=4` overrides fields by path\n"
      "(`env.options.NAME=VALUE` sets one env option; lists are written `64,64`).\n"
      "\n"
      "Fields of type `number` and reload class `hot` also take a schedule, e.g.\n"
      "`lr = ms.linear { from = 1e-3, to = 0, frames = 5e6 }` or a Lua function of progress:\n"
      "see [Schedules](lua-api.md#schedules). The default below is then the value at frame 0.\n"
      "\n"
      "Reload class: what a running experiment does when a reloaded script changes the field.\n"
      "`hot`: applied at the next training step; `boundary`: applied by actors at the next\n"
      "unroll boundary; `restart`: the reload is refused, naming the field.\n"
      "\n"
      "| field | type | default | range | reload | description |\n"
      "|---|---|---|---|---|---|\n";
  for (const FieldSchema& f : config_schema()) {
    std::string row = "| `" + f.path + "` | " + type_name(f.type) + " | `" + lua_literal(f.get(defaults)) +
                      "` | " + range_text(f) + " | " + reload_name(f.reload) + " | " + f.doc + " |\n";
    md += row;
  }
  md += std::string("| `") + kRewardShapingPath + "` | function | `nil` | a Lua function, or `false` for none | " +
        reload_name(kRewardShapingReload) +
        " | run by the actors once per group of envs per step to rewrite rewards: see "
        "[reward-shaping.md](reward-shaping.md) |\n";
  return md;
}

}  // namespace moonseed::engine
