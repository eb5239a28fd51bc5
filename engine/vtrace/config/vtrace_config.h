// The `vtrace` section of an experiment (V-trace; engine/config/section_registry.h): its fields,
// schema rows and rules, registered from here. No LibTorch: the launcher and the actor read it.
#pragma once

#include "engine/config/experiment_config.h"

namespace moonseed::engine {

struct VTraceConfig {
  static constexpr const char* kName = "vtrace";

  double gamma = 0.99;
  double lambda = 1.0;
  double rho_clip = 1.0;
  double pg_rho_clip = 1.0;
  double c_clip = 1.0;
  double baseline_cost = 0.5;
  double entropy_cost = 2.5e-4;
  // How evaluation envs (topology.eval_envs_per_actor) act: false samples from the policy, as
  // training does; true takes its mode (argmax of the logits, the Gaussian's mean).
  bool eval_greedy = false;
};

}  // namespace moonseed::engine
