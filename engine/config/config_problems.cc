#include "engine/config/config_problems.h"

#include <stdexcept>

#include "base/text.h"
#include "engine/config/schema.h"
#include "engine/config/section_registry.h"
#include "engine/config/values.h"

namespace moonseed::engine {
namespace {

void field_problems(const ExperimentConfig& config, std::vector<ConfigProblem>* problems) {
  for (const FieldSchema& field : config_schema()) {
    std::string message = check_value(field, field.get(config));
    if (!message.empty()) problems->push_back(ConfigProblem{{field.path}, std::move(message)});
  }
}

// In the order the loader has always reported them; each names the fields
// involved, the one a user would change first.
void cross_field_problems(const ExperimentConfig& config, std::vector<ConfigProblem>* problems) {
  auto report = [&](std::vector<std::string> fields, std::string message) {
    problems->push_back(ConfigProblem{std::move(fields), std::move(message)});
  };
  const TopologyConfig& t = config.topology;
  if (t.groups_per_actor > t.envs_per_actor) {
    report({"topology.groups_per_actor", "topology.envs_per_actor"},
           "groups_per_actor (" + std::to_string(t.groups_per_actor) + ") exceeds envs_per_actor (" +
               std::to_string(t.envs_per_actor) + "): every group needs at least one env");
  }
  for (const ScheduledField& s : config.schedules) {
    if (s.schedule.axis == Schedule::Axis::kProgress && config.stop.frames <= 0) {
      report({s.path}, "follows a schedule over progress (frames / stop.frames), which needs "
                       "stop.frames > 0; stop.frames is " + std::to_string(config.stop.frames));
    }
  }
  if (t.local_actors > t.actors) {
    report({"topology.local_actors", "topology.actors"},
           "local_actors (" + std::to_string(t.local_actors) + ") exceeds actors (" + std::to_string(t.actors) + ")");
  }
  if (t.rank >= t.learners) {
    report({"topology.rank", "topology.learners"},
           "rank (" + std::to_string(t.rank) + ") must be below learners (" + std::to_string(t.learners) + ")");
  }
  if (t.learners > 1 && t.actors < t.learners) {
    report({"topology.actors", "topology.learners"},
           "actors (" + std::to_string(t.actors) + ") must be at least learners (" + std::to_string(t.learners) +
               "): every rank serves its own actors");
  }
  const int eval_envs = t.eval_envs_per_actor;
  if (eval_envs >= t.envs_per_actor) {
    report({"topology.eval_envs_per_actor", "topology.envs_per_actor"},
           "eval_envs_per_actor (" + std::to_string(eval_envs) + ") must be below envs_per_actor (" +
               std::to_string(t.envs_per_actor) + "): some envs must train");
  }
  if (config.stop.eval_return_mean != 0 && eval_envs == 0) {
    report({"stop.eval_return_mean", "topology.eval_envs_per_actor"},
           "stop.eval_return_mean needs evaluation envs: set topology.eval_envs_per_actor >= 1");
  }
  // The algorithm's own rules (section_registry.h).
  if (const SectionInfo* section = find_section(config.algo); section != nullptr && section->problems) {
    section->problems(config, problems);
  }
}

}  // namespace

std::string ConfigProblem::str() const {
  return (fields.empty() ? std::string("(experiment)") : fields.front()) + ": " + message;
}

std::vector<ConfigProblem> config_problems(const ExperimentConfig& config) {
  std::vector<ConfigProblem> problems;
  field_problems(config, &problems);
  cross_field_problems(config, &problems);
  return problems;
}

void check_config(const ExperimentConfig& config) {
  const std::vector<ConfigProblem> problems = config_problems(config);
  if (problems.empty()) return;
  std::vector<std::string> lines;
  for (const ConfigProblem& p : problems) lines.push_back(p.str());
  throw std::invalid_argument("invalid config: " + base::join(lines, "; "));
}

}  // namespace moonseed::engine
