-- MinAtar Breakout-v1 trained with APPO: the engine's recipe moonseed.recipes.minatar_appo
-- (the MinAtar paper's small conv net, as moonseed.recipes.minatar_vtrace). Any MinAtar game:
--   moonseed run examples/minatar_appo.lua env.id=MinAtar/SpaceInvaders-v1
-- APPO's options and figures: docs/appo.md.
-- Run: moonseed run examples/minatar_appo.lua
local ms = require "moonseed"

return ms.experiment {
  extends = "moonseed.recipes.minatar_appo",
  env = { id = "MinAtar/Breakout-v1" },
  stop = { frames = 2000000 },
}
