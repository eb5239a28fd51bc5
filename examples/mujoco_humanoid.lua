-- MuJoCo/Humanoid-v0 with V-trace and a Gaussian policy: Debian's MuJoCo humanoid
-- (/usr/share/mujoco/model/humanoid/humanoid.xml) under Gymnasium Humanoid-v4's reward: 5 per
-- step while the torso stays between 1 and 2 m high, plus 1.25 x forward speed, minus 0.1 x the
-- squared controls; at most 1000 steps. Its 17 actuators make it a hard task: a few minutes here
-- teach it to stay up longer (the healthy reward), walking takes far more frames (docs/envs-mujoco.md).
-- Run: moonseed run examples/mujoco_humanoid.lua [stop.frames=20000000 ...]
local ms = require "moonseed"

return ms.experiment {
  name = "mujoco_humanoid",
  env = { id = "MuJoCo/Humanoid-v0" },
  model = ms.mlp { hidden = { 256, 256 }, activation = "tanh" },
  optimizer = { kind = "rmsprop", lr = 3e-4, eps = 0.01, max_grad_norm = 40 },
  learner = { batch = 32, unroll = 32, queue_capacity = 16 },
  vtrace = ms.vtrace { gamma = 0.99, entropy_cost = 1e-4 },
  topology = { actors = 2, envs_per_actor = 16 },
  inference = { max_batch = 32, deadline_us = 500 },
  stop = { frames = 5000000, return_mean = 0 },
  log = { interval_s = 2 },
}
