-- CartPole-v1 with R2D2: a recurrent dueling Q network learning from a
-- prioritized sequence replay on the learner (docs/r2d2.md), two local actors
-- of 16 envs each: 14 exploring with Ape-X's per-env epsilons, 2 evaluating.
-- Run: moonseed run examples/cartpole_r2d2.lua [r2d2.batch=64 ...]
-- Fields and their defaults: docs/config.md ("r2d2").
local ms = require "moonseed"

return ms.experiment {
  extends = "moonseed.recipes.classic_r2d2",
  name = "cartpole_r2d2",
  env = { id = "CartPole-v1" },
  -- Solved: mean return >= 475 over the last 100 episodes of the evaluation envs.
  stop = { eval_return_mean = 475 },
}
