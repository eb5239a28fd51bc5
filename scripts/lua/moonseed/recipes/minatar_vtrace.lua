-- moonseed.recipes.minatar_vtrace: V-trace on a MinAtar game (docs/envs-minatar.md).
--
--   return ms.experiment {
--     extends = "moonseed.recipes.minatar_vtrace",
--     env = { id = "MinAtar/SpaceInvaders-v1" },
--   }
--
-- The MinAtar paper's network (Young & Tian 2019): one 3x3 convolution of 16 channels over the
-- [10, 10, C] grid (channels_first turns it into [C, 10, 10]), then a 128-unit layer, with
-- separate policy and value heads on it. The games keep their defaults: sticky actions 0.1 and
-- difficulty ramping on, as the package and the paper play them.
-- The env defaults to Breakout-v1; stop.frames = 5e6 is the paper's budget.
local ms = require "moonseed"

return ms.experiment {
  name = "minatar_vtrace",
  algo = "vtrace",
  env = { id = "MinAtar/Breakout-v1" },
  model = ms.layers {
    ms.nn.channels_first(), ms.nn.conv2d(16, 3), ms.nn.relu(),
    ms.nn.flatten(), ms.nn.linear(128), ms.nn.relu(),
    shared_torso = true,
  },
  -- eps 1e-5: the loss is a mean over the batch's steps, so its gradients are small, and RMSProp's
  -- eps = 0.01 (IMPALA's, for a loss summed over the batch) swamped them: at 2M frames Asterix-v1
  -- went from 0.7 to 17.5 and Breakout-v1 from 5 to 9.4 with eps 1e-5; lr 1e-3 was worse than 2e-3
  -- (docs/envs-minatar.md "Learning curves").
  optimizer = { kind = "rmsprop", lr = 2e-3, eps = 1e-5, max_grad_norm = 40 },
  learner = { batch = 16, unroll = 20, queue_capacity = 16 },
  vtrace = ms.vtrace { gamma = 0.99, entropy_cost = 0.003 },
  topology = { actors = 2, envs_per_actor = 32 },
  inference = { max_batch = 64, deadline_us = 1000 },
  stop = { frames = 5000000 },
  log = { interval_s = 5 },
}
