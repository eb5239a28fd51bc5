-- record_bench's Atari-sized workload: SyntheticAtari-v0 renders 210x160x3 uint8
-- frames at the CPU cost of one ALE step with frame skip 4 (envs/synthetic/synthetic_atari.h).
-- The net is deliberately light (one shared linear layer over the raw frame), so
-- the learner runs fast and recording's share of the work is as large as it gets.
-- Run: moonseed run bench/synthetic_atari.lua [record.enabled=true]
local ms = require "moonseed"

return ms.experiment {
  name = "synthetic_atari",
  env = { id = "SyntheticAtari-v0" },
  model = ms.layers { shared_torso = true, ms.nn.flatten(), ms.nn.linear(8), ms.nn.relu() },
  optimizer = { kind = "rmsprop", lr = 6e-4, eps = 0.01 },
  learner = { batch = 8, unroll = 20, queue_capacity = 16 },
  vtrace = ms.vtrace { gamma = 0.99, entropy_cost = 0.01 },
  topology = { actors = 2, envs_per_actor = 8 },
  inference = { max_batch = 16, deadline_us = 2000 },
  stop = { seconds = 60 },
  checkpoint = { interval_s = 0 },
}
