-- MinAtar Breakout-v1 trained with R2D2: the engine's recipe moonseed.recipes.minatar_r2d2
-- (the MinAtar paper's conv net under an LSTM). Any MinAtar game: change env.id, e.g.
--   moonseed run examples/minatar_r2d2.lua env.id=MinAtar/Asterix-v1
-- Games, options and the figures measured on 2 cores: docs/envs-minatar.md.
-- Run: moonseed run examples/minatar_r2d2.lua
local ms = require "moonseed"

return ms.experiment {
  extends = "moonseed.recipes.minatar_r2d2",
  env = { id = "MinAtar/Breakout-v1" },
  stop = { frames = 2000000 },
}
