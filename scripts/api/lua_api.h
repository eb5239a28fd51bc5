// The native Lua API of Moonseed: module `moonseed.core`, which the Lua
// library `moonseed` (scripts/lua/moonseed/init.lua) re-exports.
//
//   core.env.make(id [, options])  -> Env (typed userdata, metatable "moonseed.Env")
//     env:reset([seed])            -> obs                  (array of numbers)
//     env:step(action)             -> obs, reward, terminated, truncated
//         action: integer index (discrete), number or array of numbers (box)
//     env:get_state()              -> array of numbers
//     env:set_state(state)
//     env:spec()                   -> {id, observation = {kind, shape, low, high, dtype, n},
//                                      action = {kind, n, shape, low, high, dtype},
//                                      max_episode_steps}
//   core.env.ids()                 -> array of env ids
//   core.vtrace.targets{log_rhos, discounts, rewards, values, bootstrap_value,
//                       [mask], [lambda], [rho_clip], [pg_rho_clip], [c_clip]}
//                                  -> {vs = {...}, pg_advantages = {...}}
//   core.load_experiment(path [, overrides]) -> the resolved config as nested tables
//   core.nn.preset(name)           -> the layer list of a model preset ("nature_cnn", ...)
//   core.sections      the algorithms' config sections, by name (init.lua makes ms.<name>)
//   core.r2d2.value_rescale / inverse_value_rescale / n_step_targets / priorities /
//             ape_x_epsilon       R2D2's math on one stream (scripts/algos/r2d2/lua_r2d2_api.cc)
//   core.log.open(path)            -> an experience log to read: log:info(), log:episodes{...},
//                                     log:steps{...}, log:problems(), log:close() (lua_log_api.cc)
//
// Errors are Lua errors: bad arguments in luaL_check* style; failures of the
// engine (unknown env id, wrong state size, invalid config) carry its message.
// Stepping an env whose episode ended, or before its first reset, is an error.
//
// Functions run on the calling Lua state only; an Env must not be shared
// between Lua states.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <lua.hpp>

#include "engine/config/experiment_config.h"

namespace moonseed::scripts {

// Registers `moonseed.core` in package.preload (loaded by `require`).
void open_moonseed_api(lua_State* L);

// What core.load_experiment(path, overrides) calls: the experiment loader, which sits above this
// API (scripts/loader/ opens it in the states it loads scripts in) and registers itself here at
// static initialisation. Without one, core.load_experiment raises a Lua error saying so.
using ExperimentLoader = engine::ExperimentConfig (*)(const std::string& path,
                                                      const std::vector<std::string>& overrides);
void set_experiment_loader(ExperimentLoader loader);

// Pushes the config as nested tables keyed like the schema paths
// (t.optimizer.lr, t.model.hidden[1], t.env.options.max_episode_steps): a
// scheduled field as its schedule table (what ms.linear builds), and
// t.reward_shaping as the function (shaping_function.h push_shaping_function),
// so a script that returns the table loads as the same experiment.
void push_config(lua_State* L, const engine::ExperimentConfig& config);


// The `nn` table of moonseed.core (lua_model_api.cc).
void push_nn_api(lua_State* L);


// The `log` table of moonseed.core (lua_log_api.cc): experience logs read from Lua.
void push_log_api(lua_State* L);


}  // namespace moonseed::scripts
