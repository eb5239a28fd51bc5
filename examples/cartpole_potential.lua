-- CartPole-v1 with potential-based reward shaping: the engine's recipe
-- moonseed.recipes.cartpole_potential (scripts/lua/moonseed/recipes/), which
-- adds F = gamma * Phi(s') - Phi(s) with Phi(s) = -(x^2 + theta^2) to every
-- reward. To shape with your own potential, extend it and replace
-- reward_shaping; the call: docs/reward-shaping.md ("Potential-based shaping").
-- Run: moonseed run examples/cartpole_potential.lua
local ms = require "moonseed"

return ms.experiment {
  extends = "moonseed.recipes.cartpole_potential",
}
