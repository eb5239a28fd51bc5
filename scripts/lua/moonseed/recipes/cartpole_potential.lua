-- moonseed.recipes.cartpole_potential: cartpole_vtrace with potential-based
-- reward shaping (Ng, Harada & Russell 1999): every reward gets
-- F = gamma * Phi(s') - Phi(s), with Phi(s) = -(x^2 + theta^2) (cart position
-- x, pole angle theta) and Phi of a terminal s' taken as 0. Shaping of this
-- form leaves the optimal policies unchanged; it only tells the learner
-- earlier that a centred, upright pole is better. The call and its arguments:
-- docs/reward-shaping.md ("Potential-based shaping").
local ms = require "moonseed"

return ms.experiment {
  extends = "moonseed.recipes.cartpole_vtrace",
  name = "cartpole_potential",
  -- Runs on the actors, once per group of envs per step. gamma must be the
  -- learner's (vtrace.gamma, 0.99 in the recipe): the function cannot read the
  -- config, so it is written here.
  reward_shaping = function(n, reward, obs, obs_size, terminated, truncated, prev_obs, env, step)
    local gamma = 0.99
    for i = 0, n - 1 do
      -- step 0 is a reset observation: no action led to it, nothing to shape.
      if step[i] > 0 then
        local o = i * obs_size
        -- CartPole's observation: x, x_dot, theta, theta_dot.
        local phi = -(prev_obs[o] ^ 2 + prev_obs[o + 2] ^ 2)
        local phi_next = 0
        if terminated[i] == 0 then phi_next = -(obs[o] ^ 2 + obs[o + 2] ^ 2) end
        reward[i] = reward[i] + gamma * phi_next - phi
      end
    end
  end,
}
