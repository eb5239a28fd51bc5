// The `toy` section: a test-only algorithm's config (tests/algos/toy/, docs/architecture.md
// "Adding an algorithm"), registered from toy_config.cc like any algorithm's section.
#pragma once

#include "engine/config/experiment_config.h"

namespace moonseed::toy {

struct ToyConfig {
  static constexpr const char* kName = "toy";

  double scale = 1;    // weight of the value regression
  double gamma = 0.9;  // discount of the returns the value regresses on
};

}  // namespace moonseed::toy
