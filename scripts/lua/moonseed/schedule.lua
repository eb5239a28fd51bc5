-- Schedules of numeric hyperparameters (docs/lua-api.md "Schedules").
--
-- Each builder turns its friendly arguments into the one schedule table the
-- engine reads (scripts/api/lua_schedules.h):
--   { schedule = KIND, axis = "frames" | "progress", points = { {x, value}, ... } }
-- The engine then checks the points (order, range of the field) and names the
-- field in its errors; this file only checks the arguments' shape. Errors are
-- raised without a position: init.lua re-raises them at the script's line.
-- Users call these through `ms.linear` etc., which also record that line.

local M = {}

local function fail(fmt, ...)
  error(fmt:format(...), 0)
end

local function kind_of(v)
  return v == nil and "nothing" or type(v)
end

local function expect_table(t)
  if type(t) ~= "table" then fail("expects a table, got %s", kind_of(t)) end
end

-- Every key of t must be one of `allowed` (an array of names): a misspelled
-- argument is an error, never a silent default.
local function check_keys(t, allowed)
  local known = {}
  for _, name in ipairs(allowed) do known[name] = true end
  for key in pairs(t) do
    if not known[key] then
      fail("unknown key %s; it takes %s", type(key) == "string" and ("'" .. key .. "'") or tostring(key),
           table.concat(allowed, ", "))
    end
  end
end

local function number(t, key)
  local v = t[key]
  if type(v) ~= "number" then fail("%s must be a number, got %s", key, kind_of(v)) end
  return v
end

-- A list of numbers, `what` naming it in errors.
local function numbers(list, what)
  if type(list) ~= "table" then fail("%s must be a list of numbers, got %s", what, kind_of(list)) end
  local n = 0
  for _ in pairs(list) do n = n + 1 end
  if n ~= #list then fail("%s must be a list of numbers, got named or missing entries", what) end
  for i = 1, #list do
    if type(list[i]) ~= "number" then fail("%s[%d] must be a number, got %s", what, i, kind_of(list[i])) end
  end
  return list
end

local function axis_flag(t)
  if t.progress ~= nil and type(t.progress) ~= "boolean" then
    fail("progress must be true (x is a fraction of stop.frames) or false (x is env frames), got %s",
         kind_of(t.progress))
  end
  return t.progress and "progress" or "frames"
end

-- linear / cosine: from -> to over [0, frames] or [0, progress], then held.
local function ramp(kind, t, to, frames, ...)
  -- Positional: ms.linear(from, to, frames), the short form for a command line.
  if type(t) == "number" then
    if select("#", ...) > 0 then fail("takes (from, to, frames) or a table, got more arguments") end
    t = { from = t, to = to, frames = frames }
  end
  expect_table(t)
  check_keys(t, { "from", "to", "frames", "progress" })
  local from, to = number(t, "from"), number(t, "to")
  if t.frames ~= nil and t.progress ~= nil then fail("give frames or progress, not both") end
  local x, axis
  if t.frames ~= nil then
    x, axis = number(t, "frames"), "frames"
  elseif t.progress ~= nil then
    x, axis = number(t, "progress"), "progress"
  else
    fail("give where the ramp ends: frames = N (env frames) or progress = p (fraction of stop.frames)")
  end
  return { schedule = kind, axis = axis, points = { { 0, from }, { x, to } } }
end

-- ms.constant(3e-4): the same value throughout.
function M.constant(v)
  if type(v) ~= "number" then fail("expects a number, got %s", kind_of(v)) end
  return { schedule = "constant", axis = "frames", points = { { 0, v } } }
end

-- ms.linear { from = 1e-3, to = 0, frames = 5e6 }: a straight line, then held.
function M.linear(...)
  return ramp("linear", ...)
end

-- ms.cosine { from = 0.01, to = 0.001, progress = 1 }: half a cosine, then held.
function M.cosine(...)
  return ramp("cosine", ...)
end

-- ms.step { values = {1e-3, 3e-4, 1e-4}, at = {1e6, 2e6} }: values[1] until
-- at[1], values[k + 1] from at[k] on. `progress = true`: `at` are fractions.
function M.step(t)
  expect_table(t)
  check_keys(t, { "values", "at", "progress" })
  local values, at = numbers(t.values, "values"), numbers(t.at, "at")
  if #values ~= #at + 1 then
    fail("values needs one entry more than at (the value before the first boundary); got %d values and %d boundaries",
         #values, #at)
  end
  local points = { { 0, values[1] } }
  for i = 1, #at do points[i + 1] = { at[i], values[i + 1] } end
  return { schedule = "step", axis = axis_flag(t), points = points }
end

-- ms.piecewise { {0, 1e-3}, {1e6, 5e-4}, {2e6, 1e-4} }: straight lines between
-- (x, value) points, held outside them. `progress = true`: x are fractions.
function M.piecewise(t)
  expect_table(t)
  local points = {}
  for key in pairs(t) do
    if key ~= "progress" and (type(key) ~= "number" or key < 1 or key > #t or key % 1 ~= 0) then
      fail("unknown key %s; it takes {x, value} points and progress",
           type(key) == "string" and ("'" .. key .. "'") or tostring(key))
    end
  end
  if #t == 0 then fail("needs at least one {x, value} point") end
  for i = 1, #t do
    local p = t[i]
    if type(p) ~= "table" or #p ~= 2 or type(p[1]) ~= "number" or type(p[2]) ~= "number" then
      fail("point %d must be {x, value} (two numbers)", i)
    end
    points[i] = { p[1], p[2] }
  end
  return { schedule = "piecewise", axis = axis_flag(t), points = points }
end

return M
