-- Memory: CueRecall-v0 shows a cue (one of 4) on the first observation, hides
-- it for `delay` steps, then asks for it: +1 for the right answer, -1 for a
-- wrong one. Only an agent that remembers the cue beats chance (-0.5 with 4
-- cues); the LSTM of moonseed.recipes.classic_r2d2 carries it over the delay,
-- and burn-in 8 + trace 24 covers whole episodes of delay + 2 steps.
-- Run: moonseed run examples/cue_recall_r2d2.lua [env.options.delay=20]
local ms = require "moonseed"

return ms.experiment {
  extends = "moonseed.recipes.classic_r2d2",
  name = "cue_recall_r2d2",
  env = { id = "CueRecall-v0", options = { delay = 10, cues = 4 } },
  stop = { eval_return_mean = 0.95, seconds = 300 },
}
