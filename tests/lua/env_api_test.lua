-- The env part of the moonseed Lua API (scripts/api/lua_api.h), run by scripts_test.
local ms = require "moonseed"

local function same(a, b)
  if #a ~= #b then return false end
  for i = 1, #a do
    if a[i] ~= b[i] then return false end
  end
  return true
end

local listed = false
for _, id in ipairs(ms.env.ids()) do listed = listed or id == "CartPole-v1" end
assert(listed, "env.ids() lists CartPole-v1")

local env = ms.env.make("CartPole-v1")
local spec = env:spec()
assert(spec.id == "CartPole-v1", spec.id)
assert(spec.observation.kind == "box" and spec.observation.dtype == "float32")
assert(#spec.observation.shape == 1 and spec.observation.shape[1] == 4)
assert(spec.action.kind == "discrete" and spec.action.n == 2)
assert(spec.max_episode_steps == 500, spec.max_episode_steps)

-- Reset with the same seed twice gives the same first observation.
local first = env:reset(42)
assert(#first == 4)
assert(same(first, env:reset(42)), "reset(42) twice differs")

-- step returns obs, reward, terminated, truncated.
assert(select("#", env:step(1)) == 4)
local obs, reward, terminated, truncated = env:step(0)
assert(#obs == 4 and reward == 1 and terminated == false and truncated == false)

-- set_state(get_state()) on another env continues identically.
local copy = ms.env.make("CartPole-v1")
copy:set_state(env:get_state())
for i = 1, 5 do
  local o1, r1, t1, u1 = env:step(i % 2)
  local o2, r2, t2, u2 = copy:step(i % 2)
  assert(same(o1, o2) and r1 == r2 and t1 == t2 and u1 == u2, "step " .. i .. " after set_state differs")
end

-- An unknown id is an error naming it.
local ok, err = pcall(ms.env.make, "NoSuchEnv-v0")
assert(not ok and err:find("NoSuchEnv-v0", 1, true), tostring(err))

-- A plugin env never runs in this process: asking for one says where it runs.
ok, err = pcall(ms.env.make, "Catch-v0", { plugin = "libcatch.so" })
assert(not ok and err:find("plugin env (env.plugin) runs only in actors", 1, true), tostring(err))

-- Bad actions and states are errors.
ok, err = pcall(env.step, env, 2)
assert(not ok and err:find("action"), tostring(err))
ok = pcall(copy.set_state, copy, { 1, 2 })
assert(not ok, "a state of the wrong size is refused")

-- Stepping before the first reset, or after an episode ended, asks for a reset.
local fresh = ms.env.make("CartPole-v1")
ok, err = pcall(fresh.step, fresh, 0)
assert(not ok and err:find("reset"), tostring(err))
env:reset(0)
local done = false
while not done do
  local _, _, t, u = env:step(1)
  done = t or u
end
ok, err = pcall(env.step, env, 1)
assert(not ok and err:find("reset"), tostring(err))

-- Options are passed by name.
assert(ms.env.make("CartPole-v1", { max_episode_steps = 10 }):spec().max_episode_steps == 10)
assert(tostring(env) == "moonseed.Env(CartPole-v1)", tostring(env))
