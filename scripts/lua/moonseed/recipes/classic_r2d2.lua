-- moonseed.recipes.classic_r2d2: R2D2 sized for the classic-control tasks, on
-- moonseed.recipes.r2d2_base (the paper's settings) with a small recurrent net
-- (linear 64 -> relu -> LSTM 64, dueling streams of 64) and short sequences
-- (burn-in 8 + trace 24 every 16 steps), 5-step targets with gamma 0.99, a
-- faster learning rate and target period, and a replay of 4000 sequences.
-- The env is left to the recipe that extends this one (default CartPole-v1).
local ms = require "moonseed"

return ms.experiment {
  extends = "moonseed.recipes.r2d2_base",
  name = "classic_r2d2",
  model = ms.layers { ms.nn.linear(64), ms.nn.relu(), ms.nn.lstm(64) },
  optimizer = { lr = 1e-3 },
  r2d2 = ms.r2d2 {
    burn_in = 8, trace = 24, period = 16, n_step = 5, gamma = 0.99,
    target_period = 100, batch = 32, capacity = 4000, min_fill = 200,
    samples_per_insert = 1, head_hidden = 64,
  },
  -- The last 2 envs of each actor evaluate: eval_epsilon, never replayed,
  -- reported as eval_return_mean (the training envs' return includes epsilons up to 0.4).
  topology = { actors = 2, envs_per_actor = 16, eval_envs_per_actor = 2 },
  inference = { max_batch = 32, deadline_us = 500 },
  stop = { seconds = 300 },
}
