-- MuJoCo/InvertedPendulum-v0 with V-trace and a Gaussian policy: keep the pole of the shipped
-- MJCF cart-pole (envs/mujoco/models/inverted_pendulum.xml) within 0.2 rad of upright; 1 point
-- per step, at most 1000 per episode. Reaches its stop rule (mean return 900) in about 15 s of
-- training on 2 cores (335k frames; docs/envs-mujoco.md).
-- Run: moonseed run examples/mujoco_inverted_pendulum.lua [env.options.frame_skip=3 ...]
-- The MuJoCo envs and their options: docs/envs-mujoco.md. Fields: docs/config.md.
local ms = require "moonseed"

return ms.experiment {
  name = "mujoco_inverted_pendulum",
  env = { id = "MuJoCo/InvertedPendulum-v0" },
  model = ms.mlp { hidden = { 64, 64 }, activation = "tanh" },
  optimizer = { kind = "rmsprop", lr = 1e-3, eps = 0.01 },
  learner = { batch = 16, unroll = 20, queue_capacity = 16 },
  vtrace = ms.vtrace { gamma = 0.99, entropy_cost = 1e-3 },
  topology = { actors = 2, envs_per_actor = 16 },
  inference = { max_batch = 32, deadline_us = 500 },
  stop = { return_mean = 900, seconds = 600 },
  log = { interval_s = 1 },
}
