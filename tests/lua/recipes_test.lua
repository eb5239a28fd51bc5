-- Recipes from Lua: ms.load_experiment resolves `extends` like `moonseed run`, run by scripts_test.
local ms = require "moonseed"

local root = assert(arg[0]:match("^(.*)/tests/lua/[^/]*$"), "run from the source tree")
local example = root .. "/examples/cartpole_from_recipe.lua"

local c = ms.load_experiment(example)
assert(c.name == "cartpole_from_recipe", c.name)
assert(c.stop.seconds == 300 and c.stop.return_mean == 475, "stop is merged with the recipe's")
assert(c.env.id == "CartPole-v1" and c.optimizer.kind == "rmsprop" and c.learner.batch == 16)

-- A recipe is a module: it can be required and read like any other.
local recipe = require "moonseed.recipes.cartpole_vtrace"
assert(recipe.extends == "moonseed.recipes.classic_vtrace")

-- Overrides apply over the script and its recipes; a bad one names the command line.
assert(ms.load_experiment(example, { "stop.return_mean=400" }).stop.return_mean == 400)
local ok, err = pcall(ms.load_experiment, example, { "stop.seconds=-1" })
assert(not ok and err:find("command line: stop.seconds", 1, true), tostring(err))
