#include "engine/r2d2/config/r2d2_config.h"

#include <string>
#include <utility>
#include <vector>

#include "engine/config/schema_rows.h"
#include "engine/config/section_registry.h"

namespace moonseed::engine {
namespace {

using namespace schema_rows;  // NOLINT: the row helpers are this file's vocabulary

std::vector<FieldSchema> r2d2_rows() {
  return {
      integer(MOONSEED_SECTION_FIELD(R2d2Config, burn_in), 0, 100000, kRestart,
              "steps each replayed sequence runs without gradient to warm the LSTM state"),
      integer(MOONSEED_SECTION_FIELD(R2d2Config, trace), 2, 100000, kRestart, "steps of each sequence that are trained on"),
      integer(MOONSEED_SECTION_FIELD(R2d2Config, period), 1, 100000, kRestart,
              "steps between the starts of an env's sequences (sequences overlap by burn_in + trace - period)"),
      integer(MOONSEED_SECTION_FIELD(R2d2Config, n_step), 1, 1000, kRestart, "steps of reward in each double-Q target"),
      number(MOONSEED_SECTION_FIELD(R2d2Config, gamma), 0, 1, kHot, "discount factor"),
      number(MOONSEED_SECTION_FIELD(R2d2Config, eta), 0, 1, kRestart, "sequence priority: eta max |td| + (1 - eta) mean |td|"),
      number(MOONSEED_SECTION_FIELD(R2d2Config, rescale_eps), 0, 1, kRestart, "epsilon of the value rescaling h", true),
      integer(MOONSEED_SECTION_FIELD(R2d2Config, target_period), 1, 1 << 30, kRestart,
              "optimizer steps between copies of the online net into the target net"),
      integer(MOONSEED_SECTION_FIELD(R2d2Config, batch), 1, 65536, kRestart, "sequences per training step"),
      integer(MOONSEED_SECTION_FIELD(R2d2Config, capacity), 1, 1 << 26, kRestart, "sequences the replay holds"),
      integer(MOONSEED_SECTION_FIELD(R2d2Config, min_fill), 1, 1 << 26, kRestart, "sequences inserted before training starts"),
      number(MOONSEED_SECTION_FIELD(R2d2Config, samples_per_insert), 0, 1e6, kRestart,
             "sequences sampled per sequence inserted, held by blocking the faster side; 0 = no limit"),
      string(MOONSEED_SECTION_FIELD(R2d2Config, insert_priorities), {"acting", "learner"}, kRestart,
             "a new sequence's priority: from the Q-values the acting net gave its steps (acting), or from a "
             "forward pass of the online and target nets when it is inserted (learner: costs a third of the "
             "training thread)"),
      number(MOONSEED_SECTION_FIELD(R2d2Config, priority_exponent), 0, 10, kRestart, "alpha: sampling P(i) ~ p_i^alpha"),
      number(MOONSEED_SECTION_FIELD(R2d2Config, importance_exponent), 0, 10, kRestart,
             "beta: importance weight (N P(i))^-beta, normalised by the max"),
      number(MOONSEED_SECTION_FIELD(R2d2Config, epsilon_base), 0, 1, kHot,
             "Ape-X exploration: env i of N uses epsilon_base^(1 + epsilon_alpha i / (N - 1))"),
      number(MOONSEED_SECTION_FIELD(R2d2Config, epsilon_alpha), 0, 1000, kHot, "Ape-X exploration exponent spread"),
      number(MOONSEED_SECTION_FIELD(R2d2Config, eval_epsilon), 0, 1, kRestart, "epsilon of evaluation episodes"),
      integer(MOONSEED_SECTION_FIELD(R2d2Config, head_hidden), 0, 65536, kRestart,
              "hidden units of each dueling stream (value, advantage); 0 = linear heads"),
      boolean(MOONSEED_SECTION_FIELD(R2d2Config, dueling), kRestart, "dueling heads (value + centred advantage); false = one Q head"),
      boolean(MOONSEED_SECTION_FIELD(R2d2Config, prev_action_reward), kRestart,
              "feed the previous action (one-hot) and reward to the recurrent core")
  };
}

// Sequences that leave steps untrained, a replay that never fills, a first batch larger than it.
void r2d2_problems(const ExperimentConfig& config, std::vector<ConfigProblem>* problems) {
  auto report = [&](std::vector<std::string> fields, std::string message) {
    problems->push_back(ConfigProblem{std::move(fields), std::move(message)});
  };
  const R2d2Config& r = config.section<R2d2Config>();
  if (r.period > r.burn_in + r.trace) {
    report({"r2d2.period", "r2d2.trace", "r2d2.burn_in"},
           "period (" + std::to_string(r.period) + ") exceeds burn_in + trace (" +
               std::to_string(r.burn_in + r.trace) + "): steps between sequences would never be trained on");
  }
  if (r.min_fill > r.capacity) {
    report({"r2d2.min_fill", "r2d2.capacity"},
           "min_fill (" + std::to_string(r.min_fill) + ") exceeds capacity (" + std::to_string(r.capacity) +
               "): training would never start");
  }
  if (r.batch > r.min_fill) {
    report({"r2d2.batch", "r2d2.min_fill"},
           "batch (" + std::to_string(r.batch) + ") exceeds min_fill (" + std::to_string(r.min_fill) +
               "): the first batch would repeat sequences; raise min_fill to at least batch");
  }
}

// Tripwire: a member added to R2d2Config stops this compiling until the rows above list it.
[[maybe_unused]] void rows_list_every_member(R2d2Config& s) {
  [[maybe_unused]] auto& [burn_in, trace, period, n_step, r2d2_gamma, eta, rescale_eps, target_period, r2d2_batch,
                          capacity, min_fill, samples_per_insert, insert_priorities, priority_exponent, importance_exponent,
                          epsilon_base, epsilon_alpha, eval_epsilon, head_hidden, dueling, prev_action_reward] =
      s;
}

const SectionRegistration<R2d2Config> kSection("recurrent Q, prioritized replay", &r2d2_rows, &r2d2_problems);

}  // namespace
}  // namespace moonseed::engine
