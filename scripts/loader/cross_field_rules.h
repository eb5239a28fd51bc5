// Rules between fields, checked once every field is valid on its own: those
// of engine/config/config_problems.h (topology, schedules over progress,
// R2D2 sequences), which the learner checks again on configs built in C++,
// then those that need an environment or a model: the env id exists and
// accepts its options, and model.kind, model.layers and model.hidden declare
// a network that fits the env.
//
// A problem is a ConfigIssue at the place where the first field the rule
// names was set (a script line, a recipe line or the command line), or at the
// script with no line when every field it names kept its default.
//
// reward_shaping, when set, is called once on the env's first observation
// (RewardShaper::trial_error, at most kShapingTrialTimeS): an error there is
// an issue at the function's line.
//
// Builds an env (and, for the model, a network on the CPU) to ask them;
// nothing throws for a bad config. Thread-safe: shares nothing.
#pragma once

#include <string>
#include <vector>

#include "engine/config/experiment_config.h"
#include "envs/spec.h"
#include "scripts/loader/assigned_fields.h"
#include "scripts/api/config_error.h"

namespace moonseed::scripts {

constexpr double kShapingTrialTimeS = 1;

// Appends the problems of `config`, which `values` (read from `script`)
// resolved to, to `issues`. `spec`, when given, receives the env's spec as the
// model sees it (described, then wrapped by env.wrappers) once the env was described.
void check_cross_field(const engine::ExperimentConfig& config, const std::string& script,
                       const AssignedFields& values, std::vector<ConfigIssue>* issues,
                       envs::EnvSpec* spec = nullptr);

}  // namespace moonseed::scripts
