-- MuJoCo/InvertedPendulum-v0 with APPO and a Gaussian policy: examples/mujoco_inverted_pendulum.lua's
-- net, optimizer and actors, each batch trained in four passes of four minibatches. Reaches the
-- stop rule (mean return 900) in about 120k frames where V-trace takes 340k-405k (docs/appo.md).
-- Run: moonseed run examples/mujoco_inverted_pendulum_appo.lua [appo.epochs=2 ...]
local ms = require "moonseed"

return ms.experiment {
  name = "mujoco_inverted_pendulum_appo",
  algo = "appo",
  env = { id = "MuJoCo/InvertedPendulum-v0" },
  model = ms.mlp { hidden = { 64, 64 }, activation = "tanh" },
  optimizer = { kind = "rmsprop", lr = 1e-3, eps = 0.01 },
  learner = { batch = 16, unroll = 20, queue_capacity = 16 },
  appo = ms.appo { gamma = 0.99, entropy_cost = 1e-3, clip = 0.2, epochs = 4, minibatches = 4 },
  topology = { actors = 2, envs_per_actor = 16 },
  inference = { max_batch = 32, deadline_us = 500 },
  stop = { return_mean = 900, seconds = 600 },
  log = { interval_s = 1 },
}
