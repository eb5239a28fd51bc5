-- moonseed: the Lua library of experiment scripts.
--
--   local ms = require "moonseed"
--   return ms.experiment {
--     env = { id = "CartPole-v1" },
--     model = ms.mlp { hidden = {64, 64}, activation = "tanh" },
--     vtrace = ms.vtrace { gamma = 0.99 },
--   }
--
-- The helpers only tag tables and record where they were written: the engine
-- (scripts/experiment_loader.h) validates every field against its schema and
-- uses the recorded file:line to point its errors at the script. A plain
-- `return { ... }` works too; the helpers just make the errors more precise.
--
-- Schedules of hot numeric fields: ms.constant, ms.linear, ms.cosine, ms.step,
-- ms.piecewise (moonseed/schedule.lua), or any function of progress.
--
-- The native API (`moonseed.core`) is re-exported: ms.env.make, ms.env.ids,
-- ms.vtrace.targets, ms.load_experiment.

local core = require "moonseed.core"
local schedule = require "moonseed.schedule"

local ms = { core = core, env = core.env, load_experiment = core.load_experiment }

-- table -> { source = "@file", line = n, kind = "experiment" | "mlp" | "vtrace" | "linear" | ... }.
-- Weak keys: recording where a table was written never keeps it alive.
local origins = setmetatable({}, { __mode = "k" })

-- Records the caller of the helper that called tag (stack level 3). A helper
-- called in tail position (`return ms.experiment {...}`) has no caller frame
-- left: LuaJIT reuses it. From a script's main chunk that leaves a C frame,
-- and no line is recorded (the loader then finds the script's top-level
-- `return`); from a Lua function it records the line that called that function.
-- Helpers never tail-call tag, so that level 3 is always the helper's caller.
local function tag(kind, t)
  if type(t) ~= "table" then
    error(("ms.%s expects a table, got %s"):format(kind, type(t)), 3)
  end
  local info = debug.getinfo(3, "Sl")
  if info and info.what ~= "C" and info.currentline > 0 then
    origins[t] = { source = info.source, line = info.currentline, kind = kind }
  else
    origins[t] = { kind = kind }
  end
  return t
end

-- Where `t` was built by a helper: source ("@path") and line (nil when not
-- recorded), then kind; nothing for a table no helper built.
function ms.origin(t)
  local o = origins[t]
  if o then return o.source, o.line, o.kind end
end

-- The whole experiment; the script returns it.
function ms.experiment(t)
  tag("experiment", t)
  return t
end

-- A multilayer perceptron model section: { hidden = {64, 64}, activation = "tanh", ... }.
function ms.mlp(t)
  tag("mlp", t)
  if t.kind == nil then
    t.kind = "mlp"
  elseif t.kind ~= "mlp" then
    error(("ms.mlp: kind is %q, expected \"mlp\""):format(tostring(t.kind)), 2)
  end
  return t
end

-- ms.vtrace { gamma = 0.99, ... } is the V-trace section of an experiment;
-- ms.vtrace.targets { ... } computes V-trace targets (moonseed.core).
ms.vtrace = setmetatable({ targets = core.vtrace.targets }, {
  __call = function(_, t)
    tag("vtrace", t)
    return t
  end,
})

-- optimizer = { lr = ms.linear { from = 1e-3, to = 0, frames = 5e6 } }, and
-- ms.constant, ms.cosine, ms.step, ms.piecewise: each returns a schedule table
-- (moonseed/schedule.lua) recorded at the caller's line, so the engine's
-- errors about it (a value out of the field's range, ...) point there.
for _, kind in ipairs { "constant", "linear", "cosine", "step", "piecewise" } do
  local build = schedule[kind]
  ms[kind] = function(args)
    local ok, result = pcall(build, args)
    if not ok then error(("ms.%s: %s"):format(kind, tostring(result)), 2) end
    tag(kind, result)
    return result
  end
end

-- Driving runs (moonseed/run.lua), in `moonseed repl`, `attach`, `ctl` and
-- `script` only: ms.start(script, overrides) starts a headless run,
-- ms.attach(run_dir) connects to a running one. Experiment scripts cannot
-- (their sandbox has no control API).
function ms.start(...) return require("moonseed.run").start(...) end
function ms.attach(...) return require("moonseed.run").attach(...) end

return ms
