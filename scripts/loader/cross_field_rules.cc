#include "scripts/loader/cross_field_rules.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>
#include <stdexcept>

#include "base/text.h"
#include "engine/config/config_problems.h"
#include "engine/config/values.h"
#include "engine/learner/algorithms.h"
#include "envs/describe.h"
#include "envs/env.h"
#include "envs/env_set.h"
#include "envs/wrappers/wrappers.h"
#include "scripts/api/lua_layers.h"
#include "scripts/state/reward_shaper.h"

namespace moonseed::scripts {
namespace {

// reward_shaping runs once on the env's first observation (as its wrappers give it), under the
// limits an actor would not have until its watchdog fires: an out-of-range index, an
// error, an endless loop or a memory blow-up refuses the script now, not in
// every actor.
// The env as its description gives it: reset writes the first observation the describing
// process saw (after reset with seed 0); nothing else. Enough for the wrappers' reset, which is
// all the trial below runs, whatever the env's source (a plugin is never loaded here).
class DescribedEnv final : public envs::Env {
 public:
  explicit DescribedEnv(const envs::EnvDescription& d) : d_(d) {}
  const envs::EnvSpec& spec() const override { return d_.spec; }
  void reset(std::optional<uint64_t>, void* obs) override {
    std::memcpy(obs, d_.first_observation.data(), d_.first_observation.size());
  }
  envs::StepResult step(const void*, void*) override { throw std::logic_error("a described env does not step"); }
  std::vector<double> get_state() const override { return {}; }
  void set_state(const std::vector<double>&) override {}

 private:
  const envs::EnvDescription& d_;
};

void check_reward_shaping_trial(const engine::ExperimentConfig& config, const envs::EnvDescription& env,
                                std::vector<ConfigIssue>* issues) {
  const engine::RewardShapingConfig& f = config.reward_shaping;
  if (f.source.empty()) return;
  std::vector<std::unique_ptr<envs::Env>> one;
  one.push_back(std::make_unique<DescribedEnv>(env));
  const std::unique_ptr<envs::EnvSet> set =
      envs::wrap(std::make_unique<envs::EnvArray>(std::move(one)), config.env.wrappers, 0);
  const envs::EnvSpec& spec = set->spec();
  std::vector<uint8_t> obs(static_cast<size_t>(spec.observation.byte_size()));
  const envs::EnvOp reset = envs::EnvOp::kReset;
  const uint64_t seed = 0;
  float reward = 0;
  uint8_t flags = 0;
  std::vector<envs::EnvError> errors;
  set->run(envs::EnvSetCall{0, 1, &reset, nullptr, &seed, obs.data(), &reward, &flags}, errors);
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
                       const AssignedFields& values, std::vector<ConfigIssue>* issues, envs::EnvSpec* model_spec) {
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

  const engine::EnvConfig& env_config = config.env;
  if (!env_config.python.empty() && (!env_config.plugin.empty() || !env_config.model.empty())) {
    report({"env.python"}, "env.python = " + base::lua_quote(env_config.python) + " makes the env itself: " +
                               (env_config.plugin.empty() ? "env.model" : "env.plugin") +
                               " belongs to another kind of env; set one of them");
    return;
  }
  if (env_config.python.empty() && !env_config.python_path.empty()) {
    report({"env.python_path"}, "env.python_path is where env.python's module is found, and env.python is not set");
    return;
  }
  const std::vector<std::string> ids = envs::env_ids();
  // A plugin or a Python env serves ids of its own: it says itself which it refuses.
  if (env_config.plugin.empty() && env_config.python.empty() &&
      std::find(ids.begin(), ids.end(), config.env.id) == ids.end()) {
    const std::string close = base::closest_name(config.env.id, ids);
    report({"env.id"}, "unknown environment " + base::lua_quote(config.env.id) +
                           (close.empty() ? "" : "; did you mean " + base::lua_quote(close) + "?") +
                           " (known: " + base::join(ids) + ")");
    return;
  }
  // A plugin or Python env is described by a child process (envs/describe.h): the loader never loads it.
  envs::EnvDescription env;
  try {
    env = envs::describe_env(config.env.id, config.env.options, envs::EnvFiles{env_config.model, env_config.plugin, env_config.python, env_config.python_path});
  } catch (const std::invalid_argument& e) {
    if (!env_config.python.empty()) {
      report({"env.python", "env.options", "env.id"}, e.what());
    } else if (!env_config.plugin.empty()) {
      report({"env.plugin", "env.options", "env.id"}, e.what());
    } else {
      report({"env.options", "env.model", "env.id"}, e.what());
    }
    return;
  }
  envs::EnvSpec spec;  // what the model sees: the env's under env.wrappers
  try {
    spec = envs::wrapped_spec(env.spec, config.env.wrappers);
  } catch (const envs::WrapperUnfit& e) {
    // The field names the wrapper; the line is where the list is set.
    const Assigned* a = find_assigned(values, "env.wrappers");
    issues->push_back(ConfigIssue{a ? a->file : script, a ? a->line : 0, e.field(), e.why()});
    return;
  } catch (const std::invalid_argument& e) {
    report({"env.wrappers"}, e.what());
    return;
  }
  if (model_spec != nullptr) *model_spec = spec;
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
    const std::string problem = engine::model_problem(config, spec);
    if (!problem.empty()) {
      report({"model.layers", "model.kind", "model.hidden"}, problem + " (for " + config.env.id + ")");
    }
  }
}

}  // namespace moonseed::scripts
