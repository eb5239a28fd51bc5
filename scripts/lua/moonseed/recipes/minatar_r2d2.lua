-- moonseed.recipes.minatar_r2d2: R2D2 on a MinAtar game (docs/envs-minatar.md), on
-- moonseed.recipes.r2d2_base (the paper's settings) with the MinAtar paper's torso (one 3x3
-- convolution of 16 channels over the [10, 10, C] grid, then a 128-unit layer) under an LSTM of
-- 128 and dueling streams of 128; sequences of burn-in 10 + trace 40 every 20 steps, gamma 0.99.
-- Away from the paper's settings, for MinAtar's sparse rewards and its 5M-frame budget: Adam
-- lr 1e-3 with eps 1e-8 (the loss is a mean over the batch's steps, so its per-parameter gradients
-- are near 1e-5 and the paper's eps of 1e-3 divided every step), 5-step targets, a target copy
-- every 200 updates (docs/recurrent-design.md "MinAtar R2D2").
--
--   return ms.experiment {
--     extends = "moonseed.recipes.minatar_r2d2",
--     env = { id = "MinAtar/Seaquest-v1" },
--   }
--
-- The env defaults to Breakout-v1; stop.frames = 5e6 is the MinAtar paper's budget.
local ms = require "moonseed"

return ms.experiment {
  extends = "moonseed.recipes.r2d2_base",
  name = "minatar_r2d2",
  env = { id = "MinAtar/Breakout-v1" },
  model = ms.layers {
    ms.nn.channels_first(), ms.nn.conv2d(16, 3), ms.nn.relu(),
    ms.nn.flatten(), ms.nn.linear(128), ms.nn.relu(), ms.nn.lstm(128),
  },
  optimizer = { lr = 1e-3, eps = 1e-8 },
  r2d2 = ms.r2d2 {
    burn_in = 10, trace = 40, period = 20, n_step = 5, gamma = 0.99,
    target_period = 200, batch = 32, capacity = 10000, min_fill = 500,
    samples_per_insert = 1, head_hidden = 128,
  },
  topology = { actors = 2, envs_per_actor = 16, eval_envs_per_actor = 2 },
  inference = { max_batch = 32, deadline_us = 1000 },
  stop = { frames = 5000000 },
  log = { interval_s = 5 },
}
