-- Catch, an env written in Python (catch.py beside this file), trained with V-trace by Python
-- actors that `moonseed run` starts itself (docs/python-actors.md walks through it):
--   moonseed run examples/python_env/catch.lua
-- The same env and settings as examples/plugin_env/catch.lua (its C twin). A random policy scores
-- about -0.6 (it catches 1 ball in 5); this stops at a mean return of 0.8.
local ms = require "moonseed"

return ms.experiment {
  name = "catch_python",
  env = {
    python = "catch:make_env",  -- MODULE:FUNCTION; the module is found beside this script
    id = "Catch-v0",            -- the name in logs and metrics
    options = { rows = 10, columns = 5 },  -- make_env(rows=10.0, columns=5.0)
  },
  model = ms.mlp { hidden = { 64 }, activation = "tanh" },
  optimizer = { kind = "rmsprop", lr = 1e-3, eps = 0.01 },
  learner = { batch = 16, unroll = 20, queue_capacity = 16 },
  vtrace = ms.vtrace { gamma = 0.99, entropy_cost = 0.01 },
  topology = { actors = 2, envs_per_actor = 16 },
  inference = { max_batch = 32, deadline_us = 500 },
  stop = { return_mean = 0.8, seconds = 300 },
  log = { interval_s = 1 },
}
