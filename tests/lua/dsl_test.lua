-- The moonseed DSL helpers (scripts/lua/moonseed/init.lua), run by scripts_test.
local ms = require "moonseed"

local model = ms.mlp { hidden = { 32 } }
assert(model.kind == "mlp", "ms.mlp fills in kind")
local source, line, kind = ms.origin(model)
assert(source:find("dsl_test.lua$") and line == 4 and kind == "mlp", tostring(source) .. ":" .. tostring(line))

local vt = ms.vtrace {
  gamma = 0.5,
}
assert(vt.gamma == 0.5 and select(2, ms.origin(vt)) == 9, "ms.vtrace records the line of its table")
assert(type(ms.vtrace.targets) == "function", "ms.vtrace.targets is the core function")

local exp = ms.experiment { model = model }
assert(select(3, ms.origin(exp)) == "experiment")
assert(ms.origin({}) == nil, "an untagged table has no origin")

local ok, err = pcall(ms.mlp, { kind = "cnn" })
assert(not ok and err:find("expected \"mlp\""), tostring(err))
ok, err = pcall(ms.experiment, 3)
assert(not ok and err:find("expects a table"), tostring(err))
