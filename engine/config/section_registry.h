// Where an algorithm's folder declares its config section (docs/algorithms-design.md): the
// section's name (also the value of `algo` that selects the algorithm), a line saying what it
// is, its schema rows (engine/config/schema_rows.h) and the rules between its fields. The
// schema (engine/config/schema.h), config_problems, docs/config.md and everything that walks
// the schema take them from here, so no file outside the folder names the section.
//
//   // engine/r2d2/config/r2d2_config.cc
//   const SectionRegistration<R2d2Config> kSection(
//       "recurrent Q, prioritized sequence replay", &r2d2_rows, &r2d2_problems);
//
// Thread-safety: registrations run during static initialisation; the rest afterwards, from
// any thread. Registering a name twice, or after the schema was first built, is a bug
// (std::logic_error): a config checked before would lack the section.
#pragma once

#include <any>
#include <functional>
#include <string>
#include <vector>

#include "engine/config/config_problems.h"
#include "engine/config/schema.h"

namespace moonseed::engine {

struct SectionInfo {
  std::string name;  // "r2d2": the section's path and the `algo` value
  std::string doc;   // "recurrent Q, prioritized sequence replay"
  std::function<std::any()> make_default;
  std::function<std::vector<FieldSchema>()> rows;
  // The rules between the section's fields, checked when config.algo is this section's name
  // (config_problems.h); null = none.
  std::function<void(const ExperimentConfig&, std::vector<ConfigProblem>*)> problems;
};

void register_section(SectionInfo info);

// Every registered section, sorted by name.
const std::vector<SectionInfo>& registered_sections();

// What config_schema() calls before it builds the schema from the sections: a registration
// after it throws std::logic_error.
void freeze_sections();

// The section `name`, or nullptr.
const SectionInfo* find_section(const std::string& name);

template <class S>
class SectionRegistration {
 public:
  SectionRegistration(const char* doc, std::vector<FieldSchema> (*rows)(),
                       void (*problems)(const ExperimentConfig&, std::vector<ConfigProblem>*) = nullptr) {
    SectionInfo info;
    info.name = S::kName;
    info.doc = doc;
    info.make_default = [] { return std::any(S{}); };
    info.rows = rows;
    if (problems != nullptr) info.problems = problems;
    register_section(std::move(info));
  }
};

}  // namespace moonseed::engine
