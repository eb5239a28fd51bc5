#include "tests/algos/toy/toy_config.h"

#include <vector>

#include "engine/config/schema_rows.h"
#include "engine/config/section_registry.h"

namespace moonseed::toy {
namespace {

using namespace engine::schema_rows;  // NOLINT: the row helpers are this file's vocabulary

std::vector<engine::FieldSchema> toy_rows() {
  return {
      number(MOONSEED_SECTION_FIELD(ToyConfig, scale), 0.001, 100, kHot, "weight of the value regression"),
      number(MOONSEED_SECTION_FIELD(ToyConfig, gamma), 0, 1, kHot, "discount of the returns the value regresses on"),
  };
}

const engine::SectionRegistration<ToyConfig> kSection("a test's value regression", &toy_rows);

}  // namespace
}  // namespace moonseed::toy
