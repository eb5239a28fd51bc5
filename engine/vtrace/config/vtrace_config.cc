#include "engine/vtrace/config/vtrace_config.h"

#include <string>
#include <utility>
#include <vector>

#include "engine/config/schema_rows.h"
#include "engine/config/section_registry.h"

namespace moonseed::engine {
namespace {

using namespace schema_rows;  // NOLINT: the row helpers are this file's vocabulary

std::vector<FieldSchema> vtrace_rows() {
  return {
      number(MOONSEED_SECTION_FIELD(VTraceConfig, gamma), 0, 1, kHot, "discount factor"),
      number(MOONSEED_SECTION_FIELD(VTraceConfig, lambda), 0, 1, kHot, "trace coefficient: c_t = lambda * min(c_clip, rho_t)"),
      number(MOONSEED_SECTION_FIELD(VTraceConfig, rho_clip), 0, kInf, kHot, "clip of rho in the TD error (rho bar)", true),
      number(MOONSEED_SECTION_FIELD(VTraceConfig, pg_rho_clip), 0, kInf, kHot, "clip of rho in the policy-gradient advantage", true),
      number(MOONSEED_SECTION_FIELD(VTraceConfig, c_clip), 0, kInf, kHot, "clip of rho in the trace coefficients (c bar)", true),
      number(MOONSEED_SECTION_FIELD(VTraceConfig, baseline_cost), 0, kInf, kHot, "weight of the value loss"),
      number(MOONSEED_SECTION_FIELD(VTraceConfig, entropy_cost), 0, kInf, kHot, "weight of the entropy bonus"),
      boolean(MOONSEED_SECTION_FIELD(VTraceConfig, eval_greedy), kRestart,
              "evaluation envs (topology.eval_envs_per_actor) take the policy's mode (argmax, the Gaussian's "
              "mean); false = sample from it, as training does")
  };
}

// Tripwire: a member added to VTraceConfig stops this compiling until the rows above list it.
[[maybe_unused]] void rows_list_every_member(VTraceConfig& s) {
  [[maybe_unused]] auto& [gamma, lambda, rho_clip, pg_rho_clip, c_clip, baseline_cost, entropy_cost, eval_greedy] =
      s;
}

const SectionRegistration<VTraceConfig> kSection("IMPALA, FIFO of unrolls", &vtrace_rows);

}  // namespace
}  // namespace moonseed::engine
