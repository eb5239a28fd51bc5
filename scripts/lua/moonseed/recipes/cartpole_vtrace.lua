-- moonseed.recipes.cartpole_vtrace: CartPole-v1 on the classic-control V-trace
-- base, stopping once solved (mean return >= 475 over the last 100 episodes).
local ms = require "moonseed"

return ms.experiment {
  extends = "moonseed.recipes.classic_vtrace",
  name = "cartpole_vtrace",
  env = { id = "CartPole-v1" },
  stop = { return_mean = 475 },
  -- It solves in seconds: four metrics rows a second still draw a curve.
  log = { interval_s = 0.25 },
}
