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

-- Every algorithm the engine has gets its section tagger, with its math beside it.
local core = require "moonseed.core"
local names = {}
for _, name in ipairs(core.sections) do
  names[name] = true
  local section = ms[name] { }
  assert(select(3, ms.origin(section)) == name, "ms." .. name .. " tags its table as its section")
end
assert(names.vtrace and names.r2d2, "core.sections lists vtrace and r2d2")
assert(ms.r2d2.priorities == core.r2d2.priorities and ms.r2d2.value_rescale == core.r2d2.value_rescale,
       "ms.r2d2 carries R2D2's math")
local ok_section, err_section = pcall(ms.r2d2, 5)
assert(not ok_section and err_section:find("ms.r2d2 expects a table"), tostring(err_section))

local exp = ms.experiment { model = model }
assert(select(3, ms.origin(exp)) == "experiment")
assert(ms.origin({}) == nil, "an untagged table has no origin")

local ok, err = pcall(ms.mlp, { kind = "cnn" })
assert(not ok and err:find("expected \"mlp\""), tostring(err))
ok, err = pcall(ms.experiment, 3)
assert(not ok and err:find("expects a table"), tostring(err))
