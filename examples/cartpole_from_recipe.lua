-- CartPole-v1 from the shipped recipe moonseed.recipes.cartpole_vtrace, with
-- two fields changed. Everything else (model, optimizer, topology, stop at
-- return 475) comes from the recipe and its base, moonseed.recipes.classic_vtrace.
-- Run: moonseed run examples/cartpole_from_recipe.lua
-- How extends merges and where recipes are found: docs/recipes.md.
local ms = require "moonseed"

return ms.experiment {
  extends = "moonseed.recipes.cartpole_vtrace",
  name = "cartpole_from_recipe",
  -- A section set in part keeps the recipe's other fields (return_mean = 475).
  stop = { seconds = 300 },
}
