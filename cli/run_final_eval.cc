// Run::evaluate_final_policy (cli/run.h): what a user got, said once the run
// has stopped. The training figure (return_mean) is a window of the last 100
// episodes, sampled while the weights changed under them; these episodes are
// played by the final weights alone, on fresh envs seeded as `moonseed eval`
// seeds them: `moonseed eval RUN_DIR` of the final checkpoint plays the same
// envs again (with sampled actions, not the same actions).
#include <exception>
#include <iostream>

#include "base/text.h"
#include "cli/run.h"
#include "engine/learner/learner.h"

namespace moonseed::cli {

void Run::evaluate_final_policy() {
  const engine::ExperimentConfig& c = cfg_;
  // Not for a user who stopped it (Ctrl-C), nor after a failure, nor on a rank past 0 (rank 0's
  // weights are the group's), nor for envs the learner's process does not run (plugins, Python:
  // engine::play_episodes refuses them; their actors report the training returns).
  if (c.stop.final_eval_episodes <= 0 || signaled_ || diverged_ || actors_failed_ || group_failed_ || rank() > 0 ||
      !c.env.plugin.empty() || !c.env.python.empty()) {
    return;
  }
  // As the run's evaluation envs act: V-trace's mode with vtrace.eval_greedy, else sampled;
  // R2D2 with r2d2.eval_epsilon.
  const bool greedy = c.algo == "vtrace" && c.vtrace.eval_greedy;
  final_eval_policy_ = c.algo == "r2d2" ? "epsilon " + base::number_text(c.r2d2.eval_epsilon)
                                        : (greedy ? "greedy" : "sampled");
  try {
    // Episodes end as `moonseed eval`'s do: at the env's end or its time limit, else after 100k steps.
    final_eval_ = learner_->evaluate(c.stop.final_eval_episodes, 1000000007ull + c.seed, greedy);
  } catch (const std::exception& e) {
    std::cerr << "moonseed: final evaluation failed: " << e.what() << "\n";
  }
}

}  // namespace moonseed::cli
