-- moonseed.load_experiment from Lua, run by scripts_test.
local ms = require "moonseed"

local root = assert(arg[0]:match("^(.*)/tests/lua/[^/]*$"), "run from the source tree")
local example = root .. "/examples/cartpole_vtrace.lua"

local c = ms.load_experiment(example)
assert(c.env.id == "CartPole-v1")
assert(c.optimizer.lr == 1e-3 and c.learner.batch == 16)
assert(#c.model.hidden == 2 and c.model.hidden[1] == 64)
assert(next(c.env.options) == nil, "no env options")

local tuned = ms.load_experiment(example, { "optimizer.lr=0.01", "env.options.max_episode_steps=100" })
assert(tuned.optimizer.lr == 0.01 and tuned.env.options.max_episode_steps == 100)

local ok, err = pcall(ms.load_experiment, example, { "optimizer.lrr=0.01" })
assert(not ok and err:find("did you mean 'optimizer.lr'", 1, true), tostring(err))
