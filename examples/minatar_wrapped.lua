-- MinAtar Breakout-v1 under env wrappers (docs/env-wrappers.md): the V-trace recipe, with the
-- sticky actions done by a wrapper instead of the game, a time limit, the last two frames
-- stacked (the model sees [10, 10, 8]) and rewards clipped to [-1, 1] for training.
-- Run: moonseed run examples/minatar_wrapped.lua
local ms = require "moonseed"

return ms.experiment {
  extends = "moonseed.recipes.minatar_vtrace",
  env = {
    id = "MinAtar/Breakout-v1",
    options = { sticky_action_prob = 0 },  -- the wrapper below draws instead
    wrappers = {
      ms.wrap.sticky_actions(0.1),  -- innermost: sees the actions the learner sends
      ms.wrap.time_limit(10000),    -- steps since the reset
      ms.wrap.frame_stack(2),       -- [10, 10, 4] -> [10, 10, 8], oldest frame first
      ms.wrap.clip_reward(),        -- train on [-1, 1]; returns still count the game's rewards
    },
  },
  stop = { frames = 2000000 },
}
