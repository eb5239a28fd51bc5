-- The schedule helpers (scripts/lua/moonseed/schedule.lua through ms.*), run by scripts_test.
-- Each returns the plain schedule table the engine reads; the engine's own
-- checks (order of points, ranges) are tested in tests/scripts/schedules_test.cc.
local ms = require "moonseed"

local function same(a, b)
  if type(a) ~= "table" or type(b) ~= "table" then return a == b end
  for k, v in pairs(a) do
    if not same(v, b[k]) then return false end
  end
  for k in pairs(b) do
    if a[k] == nil then return false end
  end
  return true
end

local function expect(got, want, what)
  assert(same(got, want), what)
end

local lr = ms.linear { from = 1e-3, to = 0, frames = 5e6 }
expect(lr, { schedule = "linear", axis = "frames", points = { { 0, 1e-3 }, { 5e6, 0 } } }, "ms.linear over frames")
local source, line, kind = ms.origin(lr)
assert(source:find("schedule_test.lua$") and line == 21 and kind == "linear", tostring(source) .. ":" .. tostring(line))

expect(ms.cosine { from = 0.01, to = 0.001, progress = 0.5 },
       { schedule = "cosine", axis = "progress", points = { { 0, 0.01 }, { 0.5, 0.001 } } }, "ms.cosine over progress")
expect(ms.constant(3e-4), { schedule = "constant", axis = "frames", points = { { 0, 3e-4 } } }, "ms.constant")
expect(ms.step { values = { 1e-3, 3e-4, 1e-4 }, at = { 1e6, 2e6 } },
       { schedule = "step", axis = "frames", points = { { 0, 1e-3 }, { 1e6, 3e-4 }, { 2e6, 1e-4 } } }, "ms.step")
expect(ms.step { values = { 1, 2 }, at = { 0.5 }, progress = true },
       { schedule = "step", axis = "progress", points = { { 0, 1 }, { 0.5, 2 } } }, "ms.step over progress")
expect(ms.piecewise { { 0, 1 }, { 10, 2 }, progress = false },
       { schedule = "piecewise", axis = "frames", points = { { 0, 1 }, { 10, 2 } } }, "ms.piecewise")

-- Misuse is an error naming the helper, at the caller's line.
local function fails(pattern, f, ...)
  local ok, err = pcall(f, ...)
  assert(not ok and tostring(err):find(pattern, 1, true), tostring(err))
end
fails("ms.linear: unknown key 'too'", ms.linear, { from = 1, too = 0, frames = 1 })
fails("ms.linear: to must be a number, got nothing", ms.linear, { from = 1, frames = 1 })
fails("ms.cosine: give frames or progress, not both", ms.cosine, { from = 1, to = 0, frames = 1, progress = 1 })
fails("ms.cosine: give where the ramp ends", ms.cosine, { from = 1, to = 0 })
fails("ms.constant: expects a number, got string", ms.constant, "fast")
fails("ms.step: values needs one entry more than at", ms.step, { values = { 1, 2 }, at = { 1, 2 } })
fails("ms.step: at[2] must be a number", ms.step, { values = { 1, 2, 3 }, at = { 1, "x" } })
fails("ms.step: progress must be true", ms.step, { values = { 1 }, at = {}, progress = 1 })
fails("ms.piecewise: point 2 must be {x, value}", ms.piecewise, { { 0, 1 }, { 5 } })
fails("ms.piecewise: unknown key 'frames'", ms.piecewise, { { 0, 1 }, frames = true })
fails("ms.piecewise: needs at least one", ms.piecewise, {})

local ok, err = pcall(function()
  local s = ms.linear { from = 1 }  -- line 54 (not a tail call: that frame would be gone)
  return s
end)
assert(not ok and tostring(err):find("schedule_test.lua:54: ms.linear", 1, true), tostring(err))
