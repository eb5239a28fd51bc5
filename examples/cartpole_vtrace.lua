-- CartPole-v1 with V-trace: a small MLP policy, two local actors of 32 envs.
-- Run: moonseed run examples/cartpole_vtrace.lua [optimizer.lr=3e-4 ...]
-- Fields and their defaults: docs/config.md.
local ms = require "moonseed"

return ms.experiment {
  name = "cartpole_vtrace",
  env = { id = "CartPole-v1" },
  model = ms.mlp { hidden = { 64, 64 }, activation = "tanh" },
  vtrace = ms.vtrace { gamma = 0.99 },
  optimizer = { kind = "adam", lr = 1e-3 },
  learner = { batch = 16, unroll = 20 },
  topology = { actors = 2, envs_per_actor = 32 },
  inference = { max_batch = 64, deadline_us = 500 },
  stop = { return_mean = 475, seconds = 120 },
  log = { interval_s = 1 },
}
