// make_env and env_ids: the table of built-in envs and the options each accepts.

#include <algorithm>
#include <climits>
#include <cmath>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "base/text.h"
#include "envs/classic/acrobot.h"
#include "envs/classic/cartpole.h"
#include "envs/classic/cartpole_no_velocity.h"
#include "envs/classic/mountain_car.h"
#include "envs/classic/mountain_car_continuous.h"
#include "envs/classic/pendulum.h"
#include "envs/env.h"
#include "envs/memory/cue_recall.h"
#include "envs/minatar/minatar_env.h"
#include "envs/mujoco/mujoco_env.h"
#include "envs/plugin_env.h"
#include "envs/synthetic/synthetic_atari.h"

namespace moonseed::envs {
namespace {

// Options after their names were checked; values are checked where they are read.
class CheckedOptions {
 public:
  CheckedOptions(std::string env_id, std::map<std::string, double> values)
      : env_id_(std::move(env_id)), values_(std::move(values)) {}

  int max_episode_steps(int fallback) const {
    const auto it = values_.find("max_episode_steps");
    if (it == values_.end()) return fallback;
    const double v = it->second;
    if (!(v >= 0 && v <= INT_MAX && std::floor(v) == v)) {
      throw std::invalid_argument(where() + "max_episode_steps must be an integer >= 0 " +
                                  "(0 = no time limit), got " + std::to_string(v));
    }
    return static_cast<int>(v);
  }

  bool flag(const std::string& name) const { return flag_or(name, false); }

  bool flag_or(const std::string& name, bool fallback) const {
    const auto it = values_.find(name);
    if (it == values_.end()) return fallback;
    if (it->second != 0.0 && it->second != 1.0) {
      throw std::invalid_argument(where() + name + " must be 0 or 1, got " +
                                  std::to_string(it->second));
    }
    return it->second == 1.0;
  }

  // An integer the env checks the range of; anything that is not an int is rejected here.
  int integer(const std::string& name, int fallback) const {
    const auto it = values_.find(name);
    if (it == values_.end()) return fallback;
    const double v = it->second;
    if (!(v >= INT_MIN && v <= INT_MAX && std::floor(v) == v)) {
      throw std::invalid_argument(where() + name + " must be an integer, got " + std::to_string(v));
    }
    return static_cast<int>(v);
  }

  int integer_in(const std::string& name, int fallback, int low, int high) const {
    const int v = integer(name, fallback);
    if (v < low || v > high) {
      throw std::invalid_argument(where() + name + " must be in [" + std::to_string(low) + ", " +
                                  std::to_string(high) + "], got " + std::to_string(v));
    }
    return v;
  }

  // A finite number >= 0.
  double non_negative(const std::string& name, double fallback) const {
    const double v = finite(name, fallback);
    if (v < 0) throw std::invalid_argument(where() + name + " must be >= 0, got " + std::to_string(v));
    return v;
  }

  double finite(const std::string& name, double fallback) const {
    const auto it = values_.find(name);
    if (it == values_.end()) return fallback;
    if (!std::isfinite(it->second)) {
      throw std::invalid_argument(where() + name + " must be finite, got " +
                                  std::to_string(it->second));
    }
    return it->second;
  }

 private:
  std::string where() const { return "make_env(\"" + env_id_ + "\"): "; }

  std::string env_id_;
  std::map<std::string, double> values_;
};

struct BuiltinEnv {
  std::string id;
  std::vector<std::string> option_names;  // sorted
  std::function<std::unique_ptr<Env>(const CheckedOptions&)> make;
  // Envs that read env.model: made with the checked options and the model's path.
  std::function<std::unique_ptr<Env>(const CheckedOptions&, const std::string&)> make_from_model = nullptr;
};

// The MuJoCo family's options (docs/envs-mujoco.md); `d` holds the id's defaults.
const std::vector<std::string> kMujocoOptions = {
    "contact_cost_max", "contact_cost_weight", "ctrl_cost_weight", "exclude_current_positions_from_observation",
    "forward_com", "forward_reward_weight", "frame_skip", "healthy_angle_index", "healthy_angle_max",
    "healthy_angle_min", "healthy_reward", "healthy_z_index", "healthy_z_max", "healthy_z_min",
    "max_episode_steps", "normal_qvel_noise", "reset_noise_scale", "terminate_when_unhealthy"};

MujocoTask mujoco_task(const CheckedOptions& o, const MujocoTask& d) {
  MujocoTask t;
  t.frame_skip = o.integer_in("frame_skip", d.frame_skip, 1, 1000);
  t.max_episode_steps = o.max_episode_steps(d.max_episode_steps);
  t.exclude_current_positions = o.flag_or("exclude_current_positions_from_observation", d.exclude_current_positions);
  t.forward_reward_weight = o.finite("forward_reward_weight", d.forward_reward_weight);
  t.forward_com = o.flag_or("forward_com", d.forward_com);
  t.ctrl_cost_weight = o.finite("ctrl_cost_weight", d.ctrl_cost_weight);
  t.contact_cost_weight = o.non_negative("contact_cost_weight", d.contact_cost_weight);
  t.contact_cost_max = o.non_negative("contact_cost_max", d.contact_cost_max);
  t.healthy_reward = o.finite("healthy_reward", d.healthy_reward);
  t.terminate_when_unhealthy = o.flag_or("terminate_when_unhealthy", d.terminate_when_unhealthy);
  t.healthy_z_index = o.integer("healthy_z_index", d.healthy_z_index);
  t.healthy_z_min = o.finite("healthy_z_min", d.healthy_z_min);
  t.healthy_z_max = o.finite("healthy_z_max", d.healthy_z_max);
  t.healthy_angle_index = o.integer("healthy_angle_index", d.healthy_angle_index);
  t.healthy_angle_min = o.finite("healthy_angle_min", d.healthy_angle_min);
  t.healthy_angle_max = o.finite("healthy_angle_max", d.healthy_angle_max);
  t.reset_noise_scale = o.non_negative("reset_noise_scale", d.reset_noise_scale);
  t.normal_qvel_noise = o.flag_or("normal_qvel_noise", d.normal_qvel_noise);
  return t;
}

// Gymnasium Humanoid-v4's defaults (the struct's own).
MujocoTask humanoid_defaults() {
  MujocoTask t;
  t.healthy_z_index = 2;
  return t;
}

// Gymnasium InvertedPendulum-v4's rule: 1 per step while |pole angle| <= 0.2; frame_skip 2.
MujocoTask inverted_pendulum_defaults() {
  MujocoTask t;
  t.frame_skip = 2;
  t.exclude_current_positions = false;
  t.forward_reward_weight = 0;
  t.forward_com = false;
  t.ctrl_cost_weight = 0;
  t.healthy_reward = 1;
  t.healthy_angle_index = 1;
  return t;
}

// Any model: forward velocity of qpos[0] minus a control cost; no health rule.
MujocoTask model_defaults() {
  MujocoTask t;
  t.exclude_current_positions = false;
  t.forward_reward_weight = 1;
  t.forward_com = false;
  t.ctrl_cost_weight = 1e-3;
  t.healthy_reward = 0;
  t.terminate_when_unhealthy = false;
  t.reset_noise_scale = 5e-3;
  return t;
}

const std::vector<BuiltinEnv>& builtin_envs() {
  static const std::vector<BuiltinEnv> table = {
      {Acrobot::kId,
       {"max_episode_steps"},
       [](const CheckedOptions& o) {
         return std::make_unique<Acrobot>(o.max_episode_steps(Acrobot::kDefaultMaxEpisodeSteps));
       }},
      {CartPole::kId,
       {"max_episode_steps", "sutton_barto_reward"},
       [](const CheckedOptions& o) {
         return std::make_unique<CartPole>(o.max_episode_steps(CartPole::kDefaultMaxEpisodeSteps),
                                           o.flag("sutton_barto_reward"));
       }},
      {CartPoleNoVelocity::kId,
       {"max_episode_steps", "sutton_barto_reward"},
       [](const CheckedOptions& o) {
         return std::make_unique<CartPoleNoVelocity>(
             o.max_episode_steps(CartPoleNoVelocity::kDefaultMaxEpisodeSteps),
             o.flag("sutton_barto_reward"));
       }},
      {CueRecall::kId,
       {"cues", "delay", "max_episode_steps"},
       [](const CheckedOptions& o) {
         return std::make_unique<CueRecall>(o.integer("delay", CueRecall::kDefaultDelay),
                                            o.integer("cues", CueRecall::kDefaultCues),
                                            o.max_episode_steps(0));
       }},
      {MountainCar::kId,
       {"goal_velocity", "max_episode_steps"},
       [](const CheckedOptions& o) {
         return std::make_unique<MountainCar>(
             o.max_episode_steps(MountainCar::kDefaultMaxEpisodeSteps),
             o.finite("goal_velocity", 0.0));
       }},
      {MountainCarContinuous::kId,
       {"goal_velocity", "max_episode_steps"},
       [](const CheckedOptions& o) {
         return std::make_unique<MountainCarContinuous>(
             o.max_episode_steps(MountainCarContinuous::kDefaultMaxEpisodeSteps),
             o.finite("goal_velocity", 0.0));
       }},
      {Pendulum::kId,
       {"g", "max_episode_steps"},
       [](const CheckedOptions& o) {
         return std::make_unique<Pendulum>(o.max_episode_steps(Pendulum::kDefaultMaxEpisodeSteps),
                                           o.finite("g", Pendulum::kDefaultGravity));
       }},
      {MujocoEnv::kHumanoidId, kMujocoOptions,
       [](const CheckedOptions& o) {
         const MujocoTask task = mujoco_task(o, humanoid_defaults());
         return std::make_unique<MujocoEnv>(MujocoEnv::kHumanoidId,
                                            MujocoModelSource{MujocoEnv::humanoid_model_path(), {}}, task);
       }},
      {MujocoEnv::kInvertedPendulumId, kMujocoOptions,
       [](const CheckedOptions& o) {
         return std::make_unique<MujocoEnv>(
             MujocoEnv::kInvertedPendulumId,
             MujocoModelSource{"inverted_pendulum.xml", MujocoEnv::inverted_pendulum_xml()},
             mujoco_task(o, inverted_pendulum_defaults()));
       }},
      {MujocoEnv::kModelId, kMujocoOptions, nullptr,
       [](const CheckedOptions& o, const std::string& model) {
         return std::make_unique<MujocoEnv>(MujocoEnv::kModelId, MujocoModelSource{model, {}},
                                            mujoco_task(o, model_defaults()));
       }},
      {SyntheticAtari::kId,
       {"max_episode_steps", "step_us"},
       [](const CheckedOptions& o) {
         return std::make_unique<SyntheticAtari>(o.integer("step_us", SyntheticAtari::kDefaultStepUs),
                                                 o.max_episode_steps(0));
       }},
  };
  static const std::vector<BuiltinEnv> with_minatar = [] {
    std::vector<BuiltinEnv> all = table;
    for (const std::string& game : minatar::game_names()) {
      for (const bool minimal : {false, true}) {
        all.push_back({"MinAtar/" + game + (minimal ? "-v1" : "-v0"),
                       {"difficulty_ramping", "max_episode_steps", "sticky_action_prob"},
                       [game, minimal](const CheckedOptions& o) -> std::unique_ptr<Env> {
                         return std::make_unique<minatar::MinAtarEnv>(
                             minatar::make_game(game, o.flag_or("difficulty_ramping", true)), minimal,
                             o.finite("sticky_action_prob", minatar::kDefaultStickyActionProb),
                             o.max_episode_steps(0));
                       }});
      }
    }
    return all;
  }();
  return with_minatar;
}

}  // namespace

std::unique_ptr<Env> make_env(const std::string& id, const EnvOptions& options, const EnvFiles& files) {
  if (!files.python.empty()) {
    throw std::invalid_argument("env \"" + id + "\" is a Python env (env.python = \"" + files.python +
                                "\"): it runs only in Python actors (python3 -m moonseed.actor), not in "
                                "moonseed-actor or the learner (docs/python-actors.md)");
  }
  if (!files.plugin.empty()) {
    if (!files.model.empty()) {
      throw std::invalid_argument("make_env(\"" + id + "\"): env.model is read only by " + MujocoEnv::kModelId +
                                  ", not by a plugin (env.plugin = \"" + files.plugin + "\")");
    }
    return make_plugin_env(files.plugin, id, options);
  }
  const auto& table = builtin_envs();
  const auto entry = std::find_if(table.begin(), table.end(),
                                  [&](const BuiltinEnv& e) { return e.id == id; });
  if (entry == table.end()) {
    throw std::invalid_argument("make_env: unknown env id \"" + id +
                                "\"; known ids: " + base::join(env_ids()));
  }
  std::map<std::string, double> values;
  for (const auto& [name, value] : options) {
    const auto& accepted = entry->option_names;
    if (std::find(accepted.begin(), accepted.end(), name) == accepted.end()) {
      throw std::invalid_argument("make_env(\"" + id + "\"): unknown option \"" + name +
                                  "\"; accepted options: " + base::join(accepted));
    }
    if (!values.emplace(name, value).second) {
      throw std::invalid_argument("make_env(\"" + id + "\"): option \"" + name +
                                  "\" is given more than once");
    }
  }
  CheckedOptions checked(id, std::move(values));
  if (entry->make_from_model) {
    if (files.model.empty()) {
      throw std::invalid_argument("make_env(\"" + id + "\"): needs a model file: set env.model = \"path/to/model.xml\"");
    }
    return entry->make_from_model(checked, files.model);
  }
  if (!files.model.empty()) {
    throw std::invalid_argument("make_env(\"" + id + "\"): reads no model file, but env.model is \"" + files.model +
                                "\" (only " + MujocoEnv::kModelId + " reads one)");
  }
  return entry->make(checked);
}

std::vector<std::string> env_ids() {
  std::vector<std::string> ids;
  for (const BuiltinEnv& e : builtin_envs()) ids.push_back(e.id);
  std::sort(ids.begin(), ids.end());
  return ids;
}

}  // namespace moonseed::envs
