-- moonseed.recipes.acrobot_vtrace: Acrobot-v1 on the classic-control V-trace
-- base, stopping at Gymnasium's reward threshold (mean return >= -100 over the
-- last 100 episodes): 4 to 5 seconds of training in 3 seeds of 3.
local ms = require "moonseed"

return ms.experiment {
  extends = "moonseed.recipes.classic_vtrace",
  name = "acrobot_vtrace",
  env = { id = "Acrobot-v1" },
  stop = { return_mean = -100 },
}
