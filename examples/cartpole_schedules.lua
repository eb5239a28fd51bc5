-- CartPole-v1 from the shipped V-trace recipe, with two hyperparameters that
-- follow the number of env frames trained on: the learning rate decays in a
-- straight line and the entropy bonus anneals along half a cosine.
-- Run: moonseed run examples/cartpole_schedules.lua
-- Schedules and their forms: docs/lua-api.md "Schedules". A running run takes
-- a new one with `moonseed ctl RUN_DIR set optimizer.lr 'ms.linear(1e-3, 1e-4, 2e6)'`.
local ms = require "moonseed"

return ms.experiment {
  extends = "moonseed.recipes.cartpole_vtrace",
  name = "cartpole_schedules",
  optimizer = { lr = ms.linear { from = 1e-3, to = 2e-4, frames = 3e6 } },
  vtrace = { entropy_cost = ms.cosine { from = 0.01, to = 0.002, frames = 3e6 } },
  stop = { seconds = 300 },
}
