// What makes an ExperimentConfig unrunnable, found in one place for every way
// a config is made: the loader (scripts/loader/experiment_loader.h) reports these
// problems at the file:line each field was set, and the learner refuses a
// config built in C++ (tests, tools) that has any, so no rule is written twice.
//
// Checked here: each schema field's type, range, allowed values and rule
// (engine/config/values.h check_value), then the rules between fields that
// need nothing but the config: topology (groups <= envs, local actors <=
// actors, evaluation envs), schedules over progress, and the algorithm section's own rules
// (engine/config/section_registry.h: R2D2's sequences).
// Rules that need an environment or a model (the env id exists and takes its
// options, the layers fit the env) stay with the loader, which links both.
//
// Pure functions; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "engine/config/experiment_config.h"

namespace moonseed::engine {

struct ConfigProblem {
  // The fields the rule involves (at least one), the one to blame first: the
  // loader points at the first of them that the script set.
  std::vector<std::string> fields;
  std::string message;  // "groups_per_actor (4) exceeds envs_per_actor (2): ..."

  // "fields[0]: message"
  std::string str() const;
};

// Every problem of `config`, fields first (in schema order), then the rules
// between fields; empty when the config can run.
std::vector<ConfigProblem> config_problems(const ExperimentConfig& config);

// Throws std::invalid_argument("invalid config: " + each problem's str(),
// joined by "; ") when config_problems(config) finds any.
void check_config(const ExperimentConfig& config);

}  // namespace moonseed::engine
