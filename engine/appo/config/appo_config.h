// The `appo` section of an experiment (APPO: PPO's clipped surrogate on V-trace-corrected
// advantages; docs/appo.md), registered from here (engine/config/section_registry.h). No
// LibTorch: the launcher and the actor read it.
#pragma once

#include "engine/config/experiment_config.h"

namespace moonseed::engine {

struct AppoConfig {
  static constexpr const char* kName = "appo";

  // V-trace's targets (as the `vtrace` section's fields of the same names).
  double gamma = 0.99;
  double lambda = 1.0;
  double rho_clip = 1.0;
  double pg_rho_clip = 1.0;
  double c_clip = 1.0;
  // PPO's update: the ratio pi/mu clipped to [1 - clip, 1 + clip]; each batch is passed over
  // `epochs` times in `minibatches` minibatches of whole unrolls, one optimizer step each.
  double clip = 0.2;
  int epochs = 2;
  int minibatches = 4;
  double kl_coef = 0;      // weight of KL(mu || pi), estimated from the actions taken; 0 = off
  double value_clip = 0;   // V(x) kept within value_clip of its value at the batch's first pass; 0 = off
  double value_cost = 0.5;
  double entropy_cost = 0.003;
  bool normalize_advantages = false;  // advantages of each minibatch scaled to mean 0, std 1
  bool eval_greedy = false;           // as vtrace.eval_greedy
};

}  // namespace moonseed::engine
