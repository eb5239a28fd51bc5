#include "scripts/cross_field_rules.h"

#include <algorithm>
#include <memory>
#include <stdexcept>

#include "base/text.h"
#include "engine/config/config_problems.h"
#include "engine/config/values.h"
#include "engine/learner/algorithms.h"
#include "envs/describe.h"
#include "envs/env.h"
#include "scripts/lua_layers.h"
#include "scripts/reward_shaper.h"

namespace moonseed::scripts {
namespace {

// reward_shaping runs once on the env's first observation, under the limits an
// actor would not have until its watchdog fires: an out-of-range index, an
// error, an endless loop or a memory blow-up refuses the script now, not in
// every actor.
void check_reward_shaping_trial(const engine::ExperimentConfig& config, const envs::EnvDescription& env,
                                std::vector<ConfigIssue>* issues) {
  const engine::RewardShapingConfig& f = config.reward_shaping;
  if (f.source.empty()) return;
  const envs::EnvSpec& spec = env.spec;
  const std::vector<uint8_t>& obs = env.first_observation;
  const auto observations = spec.observation.dtype == envs::DType::kUInt8 ? RewardShaper::Observations::kUInt8
                                                                          : RewardShaper::Observations::kFloat32;
  const std::string error = RewardShaper::trial_error(f, observations, spec.observation.numel(), obs.data(),
                                                      kShapingTrialTimeS);
  if (error.empty()) return;
  const std::string file = f.chunk_name.size() > 1 ? f.chunk_name.substr(1) : f.chunk_name;
  issues->push_back(ConfigIssue{file, f.first_line, "reward_shaping",
                                "a trial call (one env, its first observation, reward 0) failed: " + error});
}

// Model fields a layer list makes meaningless: ms.layers {...} declares every layer itself.
const char* const kFieldsLayersIgnore[] = {"model.hidden", "model.activation"};

}  // namespace

void check_cross_field(const engine::ExperimentConfig& config, const std::string& script,
                       const AssignedFields& values, std::vector<ConfigIssue>* issues) {
  auto report = [&](const std::vector<std::string>& paths, const std::string& message) {
    for (const std::string& path : paths) {
      if (const Assigned* a = find_assigned(values, path)) {
        issues->push_back(ConfigIssue{a->file, a->line, path, message});
        return;
      }
    }
    issues->push_back(ConfigIssue{script, 0, paths.front(), message});
  };
  for (const engine::ConfigProblem& problem : engine::config_problems(config)) {
    report(problem.fields, problem.message);
  }

  const std::vector<std::string> ids = envs::env_ids();
  // A plugin serves ids of its own: it says itself which it refuses.
  if (config.env.plugin.empty() && std::find(ids.begin(), ids.end(), config.env.id) == ids.end()) {
    const std::string close = base::closest_name(config.env.id, ids);
    report({"env.id"}, "unknown environment " + base::lua_quote(config.env.id) +
                           (close.empty() ? "" : "; did you mean " + base::lua_quote(close) + "?") +
                           " (known: " + base::join(ids) + ")");
    return;
  }
  // A plugin env is described by a child process (envs/describe.h): the loader never loads it.
  envs::EnvDescription env;
  try {
    env = envs::describe_env(config.env.id, config.env.options, {config.env.model, config.env.plugin});
  } catch (const std::invalid_argument& e) {
    if (config.env.plugin.empty()) {
      report({"env.options", "env.model", "env.id"}, e.what());
    } else {
      report({"env.plugin", "env.options", "env.id"}, e.what());
    }
    return;
  }
  check_reward_shaping_trial(config, env, issues);
  const models::ModelSpec& model = config.model;
  if (model.kind == "layers") {
    // A script's recipe may have set them before ms.layers replaced the model; an override is the user's now.
    for (const char* path : kFieldsLayersIgnore) {
      const Assigned* a = find_assigned(values, path);
      if (a == nullptr || a->file != kCommandLine) continue;
      issues->push_back(ConfigIssue{
          kCommandLine, 0, path,
          std::string("the override ") + path + "=" + engine::lua_literal(a->value) +
              " would change nothing: the model is given as ms.layers {...} (model.kind = \"layers\"), "
              "which declares every layer itself. Change the layers in the script (or override model.layers)"});
    }
  }
  if (model.kind == "layers" && model.layers.empty()) {
    report({"model.kind", "model.layers"},
           "model.kind is \"layers\" but model.layers is empty: declare them, e.g. "
           "model = ms.layers {ms.nn.linear(64), ms.nn.tanh()}");
  } else if (model.kind != "layers" && !model.layers.empty()) {
    report({"model.layers", "model.kind"},
           "model.layers is set but model.kind is " + base::lua_quote(model.kind) +
               ", which ignores it: set model.kind = \"layers\" (ms.layers {...} does)");
  } else {
    const std::string problem = engine::model_problem(config, env.spec);
    if (!problem.empty()) {
      report({"model.layers", "model.kind", "model.hidden"}, problem + " (for " + config.env.id + ")");
    }
  }
}

}  // namespace moonseed::scripts
