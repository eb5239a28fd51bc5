// The reward shaping every actor process plugs into its actor loop: the experiment's
// reward_shaping function, written in Lua, run on the actor (docs/reward-shaping.md). Shared by
// `moonseed-actor` and the C API that Python actors use (actor_api/moonseed_actor.h), so both
// shape rewards the same way.
#pragma once

#include <memory>

#include "actor/actor_loop.h"

namespace moonseed::actor_api {

// A call into reward_shaping that runs longer than this ends the process with kExitShapingHung,
// after a line on stderr naming the function.
constexpr double kShapingCallLimitS = 1;
constexpr int kExitShapingHung = 5;

std::shared_ptr<actor::GroupHook> make_lua_reward_shaping();

}  // namespace moonseed::actor_api
