-- moonseed.recipes.minatar_vtrace_lstm: moonseed.recipes.minatar_vtrace with a recurrent
-- actor-critic (IMPALA's agent, docs/lua-api.md "Recurrent actor-critics"): the same torso
-- (a 3x3 convolution of 16 channels over the [10, 10, C] grid, then 128 units) under an LSTM of
-- 128 units that feeds the policy and value heads. Everything else is the feed-forward recipe's,
-- so the two compare on one knob.
--
--   return ms.experiment {
--     extends = "moonseed.recipes.minatar_vtrace_lstm",
--     env = { id = "MinAtar/Seaquest-v1" },
--   }
local ms = require "moonseed"

return ms.experiment {
  extends = "moonseed.recipes.minatar_vtrace",
  name = "minatar_vtrace_lstm",
  model = ms.layers {
    ms.nn.channels_first(), ms.nn.conv2d(16, 3), ms.nn.relu(),
    ms.nn.flatten(), ms.nn.linear(128), ms.nn.relu(), ms.nn.lstm(128),
  },
}
