-- moonseed.recipes.r2d2_base: R2D2 (Kapturowski et al. 2019) with the paper's
-- settings (REFERENCE.md "R2D2"), for a recipe to extend with its env, model
-- and sizes:
--
--   return ms.experiment {
--     extends = "moonseed.recipes.r2d2_base",
--     env = { id = "CartPoleNoVelocity-v1" },
--     model = ms.layers { ms.nn.linear(64), ms.nn.relu(), ms.nn.lstm(64) },
--   }
--
-- Sequences of burn-in 40 + trace 80 starting every 40 steps, 5-step double-Q
-- targets with gamma 0.997 and value rescaling, priorities 0.9 max + 0.1 mean
-- of |td| sampled with exponent 0.9 and importance exponent 0.6, target copy
-- every 2500 updates, Adam 1e-4 (eps 1e-3), gradient norm clipped at 40, Ape-X
-- exploration 0.4^(1 + 7 i / (N - 1)) over the N envs. The model here is the
-- paper's Atari net (Nature CNN, LSTM 512, dueling streams of 512), which
-- needs image observations: a recipe for vector observations replaces it.
local ms = require "moonseed"

return ms.experiment {
  name = "r2d2",
  algo = "r2d2",
  model = ms.layers { ms.nn.r2d2_atari() },
  optimizer = { kind = "adam", lr = 1e-4, eps = 1e-3, max_grad_norm = 40 },
  r2d2 = ms.r2d2 {
    burn_in = 40, trace = 80, period = 40, n_step = 5, gamma = 0.997,
    eta = 0.9, target_period = 2500, batch = 64,
    priority_exponent = 0.9, importance_exponent = 0.6,
    epsilon_base = 0.4, epsilon_alpha = 7, eval_epsilon = 1e-3,
    head_hidden = 512, dueling = true, prev_action_reward = true,
  },
  topology = { actors = 2, envs_per_actor = 32 },
  log = { interval_s = 1 },
}
