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
-- (scripts/loader/experiment_loader.h) validates every field against its schema and
-- uses the recorded file:line to point its errors at the script. A plain
-- `return { ... }` works too; the helpers just make the errors more precise.
--
-- Schedules of hot numeric fields: ms.constant, ms.linear, ms.cosine, ms.step,
-- ms.piecewise (moonseed/schedule.lua), or any function of progress.
--
-- The native API (`moonseed.core`) is re-exported: ms.env.make, ms.env.ids,
-- ms.vtrace.targets, ms.load_experiment, ms.log.open (experience logs,
-- docs/experience-log.md).

local core = require "moonseed.core"
local schedule = require "moonseed.schedule"

local ms = { core = core, env = core.env, load_experiment = core.load_experiment, log = core.log }

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

-- Declared models, in the spirit of Torch7's nn (docs/lua-api.md "Models"):
--   model = ms.layers { ms.nn.conv2d(32, 8, 4), ms.nn.relu(), ms.nn.flatten(), ms.nn.linear(512) }
--   model = ms.layers { ms.nn.nature_cnn(), ms.nn.lstm(512) }      -- presets splice in
-- Each ms.nn helper returns a plain layer table {kind = ..., out = ..., ...}
-- recorded at its caller's line, so the loader's errors point at the layer.
-- Sizes are checked by the loader (and against the env's observation).
ms.nn = {}

-- ms.SECTION.KIND(a, b, c) or ms.SECTION.KIND { name = value, ... }: positional
-- arguments fill `names` in order (ms.nn layers, ms.wrap env wrappers).
local function table_helper(section, kind, names)
  return function(first, ...)
    local fields = {}
    if type(first) == "table" then
      for k, v in pairs(first) do
        if type(k) == "number" and not names[k] then
          error(("ms.%s.%s: too many positional arguments (takes %s)"):format(section, kind,
            #names > 0 and table.concat(names, ", ") or "none"), 2)
        end
        fields[type(k) == "number" and names[k] or k] = v
      end
    else
      local args = { first, ... }
      if select("#", ...) + 1 > #names and not (first == nil and #names == 0) then
        error(("ms.%s.%s: too many arguments (takes %s)"):format(section, kind,
          #names > 0 and table.concat(names, ", ") or "none"), 2)
      end
      for i, name in ipairs(names) do fields[name] = args[i] end
    end
    tag(kind, fields)  -- here, so that the line recorded is the caller's
    fields.kind = kind
    return fields
  end
end

local function layer_helper(kind, names) return table_helper("nn", kind, names) end

ms.nn.linear = layer_helper("linear", { "out" })
ms.nn.lstm = layer_helper("lstm", { "out" })
ms.nn.impala_block = layer_helper("impala_block", { "out" })
ms.nn.conv2d = layer_helper("conv2d", { "out", "kernel", "stride", "padding" })
ms.nn.maxpool2d = layer_helper("maxpool2d", { "kernel", "stride", "padding" })
for _, kind in ipairs { "channels_first", "flatten", "relu", "tanh", "elu" } do
  ms.nn[kind] = layer_helper(kind, {})
end
-- Env wrappers (docs/env-wrappers.md), listed innermost first:
--   env = { id = "MinAtar/Breakout-v1", wrappers = { ms.wrap.sticky_actions(0.25), ms.wrap.frame_stack(4) } }
-- Each returns a plain table {kind = ..., name = value, ...} recorded at its caller's line;
-- a parameter left out takes its default; the loader checks the values.
ms.wrap = {
  frame_stack = table_helper("wrap", "frame_stack", { "n" }),
  action_repeat = table_helper("wrap", "action_repeat", { "k", "max_pool" }),
  time_limit = table_helper("wrap", "time_limit", { "max_steps" }),
  clip_reward = table_helper("wrap", "clip_reward", { "low", "high" }),
  sticky_actions = table_helper("wrap", "sticky_actions", { "p" }),
  scale_obs = table_helper("wrap", "scale_obs", { "scale", "offset" }),
}

-- The presets' layer lists, to splice into ms.layers or extend.
function ms.nn.nature_cnn() return core.nn.preset("nature_cnn") end
function ms.nn.impala_resnet() return core.nn.preset("impala_resnet") end

-- A declared model section: the list part holds the layers (nested lists
-- such as ms.nn.nature_cnn() are spliced in order); named fields
-- (shared_torso, init_log_std) are the model's other fields.
function ms.layers(t)
  tag("layers", t)
  local flat = {}
  local function add(list)
    for _, l in ipairs(list) do
      if type(l) == "table" and l.kind == nil and #l > 0 then add(l) else flat[#flat + 1] = l end
    end
  end
  add(t)
  local model = { kind = "layers", layers = flat }
  for k, v in pairs(t) do
    if type(k) ~= "number" then
      if k == "kind" or k == "layers" then
        error(("ms.layers: %q is set by ms.layers itself; list the layers instead"):format(k), 2)
      end
      model[k] = v
    end
  end
  tag("layers", model)
  return model
end

-- ms.<algo> { ... } is an algorithm's section of an experiment, for every algorithm the engine
-- has (core.sections: ms.vtrace { gamma = 0.99 }, ms.r2d2 { burn_in = 40, trace = 80 }, ...); its
-- fields are the algorithm's math on plain arrays, when it has some (core.<algo>):
-- ms.vtrace.targets { ... }, ms.r2d2.n_step_targets { ... }, ms.r2d2.priorities { ... }.
for _, name in ipairs(core.sections) do
  if ms[name] ~= nil then error("moonseed: the algorithm section '" .. name .. "' clashes with ms." .. name) end
  local helpers = {}
  for k, v in pairs(type(core[name]) == "table" and core[name] or {}) do helpers[k] = v end
  ms[name] = setmetatable(helpers, {
    __call = function(_, t)
      tag(name, t)
      return t
    end,
  })
end

-- R2D2's Atari network (Kapturowski et al. 2019): the Nature CNN torso, LSTM 512;
-- with r2d2.head_hidden = 512 (the default) for its dueling streams.
function ms.nn.r2d2_atari()
  local layers = core.nn.preset("nature_cnn")
  layers[#layers + 1] = ms.nn.lstm(512)
  return layers
end

-- optimizer = { lr = ms.linear { from = 1e-3, to = 0, frames = 5e6 } } (or
-- ms.linear(1e-3, 0, 5e6): from, to, frames), and
-- ms.constant, ms.cosine, ms.step, ms.piecewise: each returns a schedule table
-- (moonseed/schedule.lua) recorded at the caller's line, so the engine's
-- errors about it (a value out of the field's range, ...) point there.
for _, kind in ipairs { "constant", "linear", "cosine", "step", "piecewise" } do
  local build = schedule[kind]
  ms[kind] = function(...)
    local ok, result = pcall(build, ...)
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
