-- moonseed.recipes.minatar_appo: APPO on a MinAtar game (docs/appo.md, docs/envs-minatar.md).
--
--   return ms.experiment {
--     extends = "moonseed.recipes.minatar_appo",
--     env = { id = "MinAtar/SpaceInvaders-v1" },
--   }
--
-- moonseed.recipes.minatar_vtrace (its net, optimizer, batches, actors, env and stop.frames)
-- trained with APPO: each batch of 16 unrolls in two passes of two minibatches, the ratio
-- clipped at 0.2.
local ms = require "moonseed"

return ms.experiment {
  extends = "moonseed.recipes.minatar_vtrace",
  name = "minatar_appo",
  algo = "appo",
  appo = ms.appo { gamma = 0.99, entropy_cost = 0.003, clip = 0.2, epochs = 2, minibatches = 2 },
}
