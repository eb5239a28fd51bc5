-- The control of examples/cartpole_memory_r2d2.lua: the same recipe with a
-- feed-forward net (the LSTM taken out), which cannot recover the hidden
-- velocities of CartPoleNoVelocity-v1 and so does not reach its threshold.
-- Run: moonseed run examples/cartpole_memory_ff.lua
local ms = require "moonseed"

return ms.experiment {
  extends = "cartpole_memory_r2d2",
  name = "cartpole_memory_ff",
  model = ms.layers { ms.nn.linear(64), ms.nn.relu(), ms.nn.linear(64), ms.nn.relu() },
}
