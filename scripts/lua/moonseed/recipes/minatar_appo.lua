-- moonseed.recipes.minatar_appo: APPO on a MinAtar game (docs/appo.md, docs/envs-minatar.md).
--
--   return ms.experiment {
--     extends = "moonseed.recipes.minatar_appo",
--     env = { id = "MinAtar/SpaceInvaders-v1" },
--   }
--
-- moonseed.recipes.minatar_vtrace's net, optimizer, batches and actors, trained with APPO: each
-- batch of 16 unrolls in two passes of two minibatches, the ratio clipped at 0.2.
-- The env defaults to Breakout-v1; stop.frames = 5e6 is the MinAtar paper's budget.
local ms = require "moonseed"

return ms.experiment {
  name = "minatar_appo",
  algo = "appo",
  env = { id = "MinAtar/Breakout-v1" },
  model = ms.layers {
    ms.nn.channels_first(), ms.nn.conv2d(16, 3), ms.nn.relu(),
    ms.nn.flatten(), ms.nn.linear(128), ms.nn.relu(),
    shared_torso = true,
  },
  optimizer = { kind = "rmsprop", lr = 2e-3, eps = 1e-5, max_grad_norm = 40 },
  learner = { batch = 16, unroll = 20, queue_capacity = 16 },
  appo = ms.appo { gamma = 0.99, entropy_cost = 0.003, clip = 0.2, epochs = 2, minibatches = 2 },
  topology = { actors = 2, envs_per_actor = 32 },
  inference = { max_batch = 64, deadline_us = 1000 },
  stop = { frames = 5000000 },
  log = { interval_s = 5 },
}
