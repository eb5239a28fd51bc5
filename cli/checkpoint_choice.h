// Which checkpoint of a run `moonseed export` and `moonseed eval` read: --checkpoint N
// (RUN_DIR/checkpoints/ckpt-N.pt), --checkpoint best (RUN_DIR/best.pt, cli/best_checkpoint.h),
// or the newest by default.
#pragma once

#include <cstdint>
#include <string>

#include "engine/run/run_directory.h"

namespace moonseed::cli {

struct CheckpointChoice {
  int64_t step = -1;  // -1: the newest
  bool best = false;
};

// --checkpoint's value: a step number or "best". Throws std::invalid_argument for anything else.
CheckpointChoice parse_checkpoint_choice(const std::string& text);

// The checkpoint file chosen. Throws std::runtime_error naming the run when it has none, no
// best.pt, or no checkpoint of that step (listing the steps it has).
std::string pick_checkpoint(const engine::RunDirectory& dir, const CheckpointChoice& choice);

}  // namespace moonseed::cli
