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

  bool flag(const std::string& name, bool fallback = false) const {
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
};

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
                             minatar::make_game(game, o.flag("difficulty_ramping", true)), minimal,
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

std::unique_ptr<Env> make_env(const std::string& id, const EnvOptions& options) {
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
  return entry->make(CheckedOptions(id, std::move(values)));
}

std::vector<std::string> env_ids() {
  std::vector<std::string> ids;
  for (const BuiltinEnv& e : builtin_envs()) ids.push_back(e.id);
  std::sort(ids.begin(), ids.end());
  return ids;
}

}  // namespace moonseed::envs
