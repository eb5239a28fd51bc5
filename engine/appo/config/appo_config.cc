#include "engine/appo/config/appo_config.h"

#include <string>
#include <utility>
#include <vector>

#include "engine/config/schema_rows.h"
#include "engine/config/section_registry.h"

namespace moonseed::engine {
namespace {

using namespace schema_rows;  // NOLINT: the row helpers are this file's vocabulary

std::vector<FieldSchema> appo_rows() {
  return {
      number(MOONSEED_SECTION_FIELD(AppoConfig, gamma), 0, 1, kHot, "discount factor"),
      number(MOONSEED_SECTION_FIELD(AppoConfig, lambda), 0, 1, kHot, "V-trace's trace coefficient: c_t = lambda * min(c_clip, rho_t)"),
      number(MOONSEED_SECTION_FIELD(AppoConfig, rho_clip), 0, kInf, kHot, "clip of rho in V-trace's TD error (rho bar)", true),
      number(MOONSEED_SECTION_FIELD(AppoConfig, pg_rho_clip), 0, kInf, kHot, "clip of rho in the advantage", true),
      number(MOONSEED_SECTION_FIELD(AppoConfig, c_clip), 0, kInf, kHot, "clip of rho in V-trace's trace coefficients (c bar)", true),
      number(MOONSEED_SECTION_FIELD(AppoConfig, clip), 0, 10, kHot,
             "PPO's clip: the ratio pi(a|x) / mu(a|x) is clipped to [1 - clip, 1 + clip] in the surrogate", true),
      integer(MOONSEED_SECTION_FIELD(AppoConfig, epochs), 1, 100, kRestart,
              "passes over each batch, each in appo.minibatches optimizer steps"),
      integer(MOONSEED_SECTION_FIELD(AppoConfig, minibatches), 1, 4096, kRestart,
              "minibatches per pass, each a share of the batch's unrolls (whole unrolls; at most learner.batch)"),
      number(MOONSEED_SECTION_FIELD(AppoConfig, kl_coef), 0, kInf, kHot,
             "weight of the KL divergence KL(mu, pi) of the policy from the behaviour, estimated from the "
             "actions taken: mean of (r - 1) - log r, r = pi / mu; 0 = off"),
      number(MOONSEED_SECTION_FIELD(AppoConfig, value_clip), 0, kInf, kHot,
             "the value loss is the larger of the plain and the clipped one, V(x) kept within value_clip of its value "
             "at the batch's first pass; 0 = off"),
      number(MOONSEED_SECTION_FIELD(AppoConfig, value_cost), 0, kInf, kHot, "weight of the value loss"),
      number(MOONSEED_SECTION_FIELD(AppoConfig, entropy_cost), 0, kInf, kHot, "weight of the entropy bonus"),
      boolean(MOONSEED_SECTION_FIELD(AppoConfig, normalize_advantages), kHot,
              "scale each minibatch's advantages to mean 0 and standard deviation 1"),
      boolean(MOONSEED_SECTION_FIELD(AppoConfig, eval_greedy), kRestart,
              "evaluation envs (topology.eval_envs_per_actor) take the policy's mode (argmax, the Gaussian's "
              "mean); false = sample from it, as training does")
  };
}

// Minibatches of whole unrolls: at most one per unroll of the batch.
void appo_problems(const ExperimentConfig& config, std::vector<ConfigProblem>* problems) {
  const AppoConfig& a = config.section<AppoConfig>();
  if (a.minibatches > config.learner.batch) {
    problems->push_back(ConfigProblem{
        {"appo.minibatches", "learner.batch"},
        "minibatches (" + std::to_string(a.minibatches) + ") exceeds learner.batch (" +
            std::to_string(config.learner.batch) + "): a minibatch is at least one whole unroll"});
  }
}

// Tripwire: a member added to AppoConfig stops this compiling until the rows above list it.
[[maybe_unused]] void rows_list_every_member(AppoConfig& s) {
  [[maybe_unused]] auto& [gamma, lambda, rho_clip, pg_rho_clip, c_clip, clip, epochs, minibatches, kl_coef, value_clip,
                          value_cost, entropy_cost, normalize_advantages, eval_greedy] = s;
}

const SectionRegistration<AppoConfig> kSection("PPO's clipped surrogate on V-trace targets", &appo_rows,
                                               &appo_problems);

}  // namespace
}  // namespace moonseed::engine
