// The algorithms' config sections (engine/config/section_registry.h): what the registry holds,
// what it refuses, and that a config owns its sections' values.
#include "engine/config/section_registry.h"

#include <algorithm>
#include <any>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "engine/config/experiment_config.h"
#include "engine/config/schema.h"
#include "engine/r2d2/config/r2d2_config.h"
#include "engine/vtrace/config/vtrace_config.h"

namespace moonseed::engine {
namespace {

std::vector<std::string> section_names() {
  std::vector<std::string> names;
  for (const SectionInfo& s : registered_sections()) names.push_back(s.name);
  return names;
}

TEST(SectionRegistry, HoldsEveryLinkedAlgorithmsSectionSortedByName) {
  const std::vector<std::string> names = section_names();
  EXPECT_NE(std::find(names.begin(), names.end(), "vtrace"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "r2d2"), names.end());
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  // ... and `algo` takes exactly those names.
  EXPECT_EQ(find_field("algo")->allowed, names);
}

TEST(SectionRegistry, EverySectionRowIsInTheSchemaUnderTheSectionsName) {
  for (const SectionInfo& section : registered_sections()) {
    const std::vector<FieldSchema> rows = section.rows();
    ASSERT_FALSE(rows.empty()) << section.name;
    for (const FieldSchema& row : rows) {
      EXPECT_EQ(row.path.rfind(section.name + ".", 0), 0u) << row.path;
      EXPECT_NE(find_field(row.path), nullptr) << row.path;
    }
  }
}

TEST(SectionRegistry, RefusesANameTwiceAndAnythingAfterTheSchemaWasBuilt) {
  SectionInfo again;
  again.name = "r2d2";
  again.make_default = [] { return std::any(R2d2Config{}); };
  again.rows = [] { return std::vector<FieldSchema>{}; };
  try {
    register_section(again);
    FAIL() << "a second r2d2 section was taken";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("registered twice"), std::string::npos) << e.what();
  }
  config_schema();  // built: the set of sections is fixed from here on
  SectionInfo late = again;
  late.name = "late";
  try {
    register_section(late);
    FAIL() << "a section registered after the schema was built was taken";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("after the schema was built"), std::string::npos) << e.what();
  }
  EXPECT_EQ(find_section("late"), nullptr);
  EXPECT_EQ(find_field("late.anything"), nullptr);
}

TEST(Sections, ACopiedConfigOwnsItsSectionsValues) {
  ExperimentConfig a;
  a.section<R2d2Config>().batch = 7;
  ExperimentConfig b = a;
  b.section<R2d2Config>().batch = 9;
  b.section<VTraceConfig>().gamma = 0.5;
  EXPECT_EQ(a.section<R2d2Config>().batch, 7);
  EXPECT_EQ(a.section<VTraceConfig>().gamma, VTraceConfig{}.gamma);
  EXPECT_EQ(b.section<R2d2Config>().batch, 9);
  // The schema reads and writes the same values.
  EXPECT_EQ(std::get<int64_t>(find_field("r2d2.batch")->get(b)), 9);
  find_field("vtrace.gamma")->set(a, 0.25);
  EXPECT_EQ(a.section<VTraceConfig>().gamma, 0.25);
  EXPECT_EQ(changed_fields(a, b), (std::vector<std::string>{"r2d2.batch", "vtrace.gamma"}));
}

TEST(Sections, AFreshConfigHasEverySectionAtItsDefaults) {
  const ExperimentConfig c;
  EXPECT_EQ(c.section<R2d2Config>().burn_in, R2d2Config{}.burn_in);
  EXPECT_EQ(std::get<double>(find_field("vtrace.entropy_cost")->get(c)), VTraceConfig{}.entropy_cost);
}

}  // namespace
}  // namespace moonseed::engine
