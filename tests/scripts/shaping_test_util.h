// A reward_shaping config as the loader would make it for exp.lua, for the
// reward shaper's tests.
#pragma once

#include <string>

#include "engine/config/experiment_config.h"

namespace moonseed::scripts::testing {

inline engine::RewardShapingConfig shaping_function(const std::string& source, int first_line = 1) {
  engine::RewardShapingConfig f;
  f.source = source;
  f.chunk_name = "@exp.lua";
  f.first_line = first_line;
  return f;
}

}  // namespace moonseed::scripts::testing
