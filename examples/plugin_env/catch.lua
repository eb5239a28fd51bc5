-- Catch, an env written in C as a plugin (catch.c beside this file), trained with V-trace.
-- Build the plugin beside this script, then run (docs/env-plugins.md walks through it):
--   cc -std=c99 -O2 -shared -fPIC -I include examples/plugin_env/catch.c -o examples/plugin_env/libcatch.so
--   moonseed run examples/plugin_env/catch.lua
-- A random policy scores about -0.6 (it catches 1 ball in 5); this stops at a mean return of 0.8.
local ms = require "moonseed"

return ms.experiment {
  name = "catch_plugin",
  env = {
    plugin = "libcatch.so",  -- relative to this script's directory
    id = "Catch-v0",
    options = { rows = 10, columns = 5 },
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
