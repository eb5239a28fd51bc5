#include "engine/config/section_registry.h"

#include <algorithm>
#include <stdexcept>
#include <utility>

#include "engine/config/sections.h"

namespace moonseed::engine {
namespace {

struct Registry {
  std::vector<SectionInfo> sections;  // sorted by name
  bool frozen = false;
};

Registry& registry() {
  static Registry r;
  return r;
}

}  // namespace

void register_section(SectionInfo info) {
  Registry& r = registry();
  if (find_section(info.name) != nullptr) {
    throw std::logic_error("config section '" + info.name + "' registered twice");
  }
  if (r.frozen) {
    throw std::logic_error("config section '" + info.name +
                           "' registered after the schema was built: register sections during static initialisation");
  }
  const auto at = std::lower_bound(r.sections.begin(), r.sections.end(), info.name,
                                   [](const SectionInfo& s, const std::string& name) { return s.name < name; });
  r.sections.insert(at, std::move(info));
}

const std::vector<SectionInfo>& registered_sections() { return registry().sections; }

void freeze_sections() { registry().frozen = true; }

const SectionInfo* find_section(const std::string& name) {
  for (const SectionInfo& s : registry().sections) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

Sections::Sections() {
  for (const SectionInfo& s : registered_sections()) values_.emplace(s.name, s.make_default());
}

}  // namespace moonseed::engine
