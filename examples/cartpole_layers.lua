-- CartPole-v1 with a declared model: the shipped recipe's training setup, with
-- the torso written out layer by layer (docs/lua-api.md "Models") instead of
-- ms.mlp's sizes: linear 64 -> elu -> linear 64 -> tanh, one per head (write
-- shared_torso = true inside ms.layers to share it between policy and value).
-- Run: moonseed run examples/cartpole_layers.lua
local ms = require "moonseed"

return ms.experiment {
  extends = "moonseed.recipes.cartpole_vtrace",
  name = "cartpole_layers",
  model = ms.layers {
    ms.nn.linear(64), ms.nn.elu(),
    ms.nn.linear(64), ms.nn.tanh(),
  },
}
