-- MinAtar Breakout-v1 trained with V-trace: the engine's recipe moonseed.recipes.minatar_vtrace
-- (the MinAtar paper's small conv net). Any MinAtar game: change env.id, e.g.
--   moonseed run examples/minatar_vtrace.lua env.id=MinAtar/SpaceInvaders-v1
-- Games, options and the figures measured on 2 cores: docs/envs-minatar.md.
-- Run: moonseed run examples/minatar_vtrace.lua
local ms = require "moonseed"

return ms.experiment {
  extends = "moonseed.recipes.minatar_vtrace",
  env = { id = "MinAtar/Breakout-v1" },
  stop = { frames = 2000000 },
}
