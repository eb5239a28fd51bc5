-- Memory: CartPoleNoVelocity-v1 shows only the cart position and the pole
-- angle, so balancing needs the velocities the agent must infer from what it
-- saw before. R2D2 with an LSTM (the classic_r2d2 recipe) learns it; the same
-- recipe without the LSTM (examples/cartpole_memory_ff.lua) does not.
-- Run: moonseed run examples/cartpole_memory_r2d2.lua
local ms = require "moonseed"

return ms.experiment {
  extends = "moonseed.recipes.classic_r2d2",
  name = "cartpole_memory_r2d2",
  env = { id = "CartPoleNoVelocity-v1" },
  stop = { eval_return_mean = 400, seconds = 600 },
}
