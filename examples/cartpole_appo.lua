-- CartPole-v1 with APPO: PPO's clipped surrogate on V-trace's advantages, each batch
-- used for two passes of two minibatches (docs/appo.md).
-- Run: moonseed run examples/cartpole_appo.lua [appo.epochs=1 ...]
local ms = require "moonseed"

return ms.experiment {
  name = "cartpole_appo",
  algo = "appo",
  env = { id = "CartPole-v1" },
  model = ms.mlp { hidden = { 64, 64 }, activation = "tanh" },
  optimizer = { kind = "rmsprop", lr = 1e-3, eps = 0.01 },
  learner = { batch = 16, unroll = 20, queue_capacity = 16 },
  -- Two passes of two minibatches: half the frames V-trace needs, in about the same seconds
  -- (docs/appo.md; four minibatches halve the frames again at twice the learner time).
  appo = ms.appo { gamma = 0.99, entropy_cost = 0.01, clip = 0.2, epochs = 2, minibatches = 2 },
  topology = { actors = 2, envs_per_actor = 32 },
  inference = { max_batch = 64, deadline_us = 500 },
  stop = { return_mean = 475, seconds = 120 },
  log = { interval_s = 0.25 },
}
