-- MinAtar Breakout-v1 trained with V-trace and a recurrent actor-critic: the engine's recipe
-- moonseed.recipes.minatar_vtrace_lstm (minatar_vtrace's conv net under an LSTM of 128 that feeds
-- the policy and value heads; everything else as the feed-forward recipe). Any MinAtar game:
--   moonseed run examples/minatar_vtrace_lstm.lua env.id=MinAtar/Asterix-v1
-- Its curves beside the feed-forward ones: docs/envs-minatar.md "Recurrent V-trace and R2D2".
-- Run: moonseed run examples/minatar_vtrace_lstm.lua
local ms = require "moonseed"

return ms.experiment {
  extends = "moonseed.recipes.minatar_vtrace_lstm",
  env = { id = "MinAtar/Breakout-v1" },
  stop = { frames = 2000000 },
}
