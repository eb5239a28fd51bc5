-- moonseed.run: drive training runs from Lua: start one headless, attach to
-- one that is running, read its metrics, change it, wait for it. Used by
-- `moonseed repl` (ms.start, ms.attach), `moonseed attach` and `moonseed ctl`.
-- Not available to experiment scripts (their sandbox has no control API).
--
--   local r = ms.start("examples/cartpole_vtrace.lua", { "stop.seconds=60" })
--   r:status().frames            -- counters of the live run
--   r:set("optimizer.lr", 3e-4)  -- a hot reload with one more override
--   r:metrics(5)                 -- the last 5 rows of metrics.jsonl
--   r:wait()                     -- until it ends; returns its exit code
--
-- Every method raises a Lua error with the run's message when the run refuses
-- (an invalid value, a restart-only field) or is gone. See docs/repl.md.

local core = require "moonseed.control_core"
local json = require "moonseed.json"

local M = {}

local Run = {}
Run.__index = Run

function Run:__tostring()
  return ("Run(%s%s)"):format(self.dir or self.socket, self.pid and (", pid " .. self.pid) or "")
end

local function read_file(path)
  local f = io.open(path, "r")
  if not f then return nil end
  local text = f:read("*a")
  f:close()
  return text
end

-- The control socket of a run directory (or a socket path given directly).
local function socket_of(where)
  if where:match("%.sock$") then return where end
  local address = read_file(where .. "/control.address")
  if not address then
    error(("%s is not a run directory with a control socket (no control.address)"):format(where), 3)
  end
  return (address:gsub("^unix:", ""):gsub("%s+$", ""))
end

-- An error the console prints as its message alone, without a traceback: a
-- state of the run ("the run has ended"), not a fault in the code that asked.
-- tostring() of it is the message, so scripts that catch it read it as text.
local Plain = { __tostring = function(e) return e.message end }
function M.plain_error(message) return setmetatable({ message = message, plain = true }, Plain) end

-- "the run has ended (REASON)" when the run directory's metrics end with the
-- run's stop row, else nil (the run is alive, or was killed before its end).
function Run:ended_text()
  local f = self.dir and io.open(self.dir .. "/metrics.jsonl", "r")
  if not f then return nil end
  local last
  for line in f:lines() do
    local ok, row = pcall(json.decode, line)
    if ok and type(row) == "table" then last = row end
  end
  f:close()
  if not last or last.event ~= "stop" then return nil end
  return ("the run has ended (%s); its results are in %s"):format(tostring(last.reason or "stopped"), self.dir)
end

-- Sends one request; returns the decoded result or raises the run's error.
function Run:request(line, timeout_s)
  local ok, reply = true, nil
  if not self.control then ok, reply = pcall(core.connect, self.socket) end
  if ok then
    if not self.control then self.control = reply end
    ok, reply = pcall(self.control.request, self.control, line, timeout_s)
  end
  if not ok then
    self.control = nil
    local ended = self:ended_text()
    if ended then error(M.plain_error(ended), 2) end
    error(reply, 2)
  end
  local decoded = json.decode(reply)
  if not decoded.ok then error(decoded.error, 2) end
  return decoded.result
end

-- A Lua value as override text: numbers, booleans and strings as plain text,
-- typed by the schema on the other side; a table (a list, a schedule from
-- ms.linear, layers) as the Lua constructor that builds it, which the loader
-- evaluates as a script's value (scripts/loader/config_overrides.h).
local function value_text(v, nested)
  local t = type(v)
  if t == "number" then return ("%.17g"):format(v) end
  if t == "boolean" then return tostring(v) end
  if t == "string" then return nested and ("%q"):format(v) or ('"%s"'):format(v) end
  if t == "table" then
    local parts, named = {}, {}
    for i = 1, #v do parts[i] = value_text(v[i], true) end
    for k, x in pairs(v) do
      if type(k) ~= "number" or k < 1 or k > #v or k % 1 ~= 0 then
        named[#named + 1] = ("[%s] = %s"):format(value_text(k, true), value_text(x, true))
      end
    end
    table.sort(named)
    for _, p in ipairs(named) do parts[#parts + 1] = p end
    return "{" .. table.concat(parts, ", ") .. "}"
  end
  error("cannot set a field to a " .. t, 3)
end

function Run:status() return self:request("status") end
function Run:get(field) return self:request(field and ("get " .. field) or "get") end
function Run:set(field, value) return self:request(("set %s %s"):format(field, value_text(value))) end
function Run:reload() return self:request("reload") end
function Run:pause() return self:request("pause") end
function Run:resume() return self:request("resume") end
function Run:checkpoint() return self:request("checkpoint") end
function Run:evaluate(episodes, policy)
  return self:request(("evaluate %d %s"):format(episodes or 10, policy or "greedy"), 600)
end
function Run:stop() return self:request("stop") end

-- The last `n` (default 10) tick rows of metrics.jsonl as tables, oldest first.
function Run:metrics(n)
  n = n or 10
  local rows = {}
  local f = self.dir and io.open(self.dir .. "/metrics.jsonl", "r")
  if not f then return rows end
  for line in f:lines() do
    local ok, row = pcall(json.decode, line)
    if ok and row.event == nil then
      rows[#rows + 1] = row
      if #rows > n then table.remove(rows, 1) end
    end
  end
  f:close()
  return rows
end

-- True while the run answers on its control socket (or its process lives).
function Run:alive()
  if self.pid then return core.status(self.pid) == "running" end
  local ok = pcall(self.request, self, "status", 5)
  return ok
end

-- Waits until the run ends (or `timeout_s` passes: returns nil, "timeout").
-- A run started here returns its exit code; an attached one returns true.
-- `every_s` > 0 prints a progress line that often.
function Run:wait(timeout_s, every_s)
  local waited, last_print = 0, 0
  local step = 0.1
  while true do
    if self.pid then
      local state, code = core.status(self.pid)
      if state == "exited" then return code end
    elseif not self:alive() then
      return true
    end
    if timeout_s and waited >= timeout_s then return nil, "timeout" end
    if every_s and every_s > 0 and waited - last_print >= every_s then
      last_print = waited
      local ok, s = pcall(self.status, self)
      if ok then
        print(("%7.1fs  frames %d  return_mean %s  steps %d%s"):format(s.elapsed_s, s.frames,
          tostring(s.return_mean), s.optimizer_steps, s.paused and "  (paused)" or ""))
      end
    end
    core.sleep(step)
    waited = waited + step
  end
end

function M.attach(where)
  if type(where) ~= "string" then error("ms.attach expects a run directory, got " .. type(where), 2) end
  local self = setmetatable({ socket = socket_of(where) }, Run)
  if not where:match("%.sock$") then self.dir = where end
  local ok, control = pcall(core.connect, self.socket)
  if not ok then
    local ended = self:ended_text()
    error(ended and M.plain_error(ended) or control, 2)
  end
  self.control = control
  return self
end

-- Removes the private directory ms.start made and the files it holds.
local function remove_scratch(scratch, files)
  for _, f in ipairs(files) do os.remove(f) end
  os.remove(scratch)
end

-- Starts `moonseed run SCRIPT` in the background (its own session: it goes on
-- when the console ends) and attaches to it once its control socket answers.
-- `overrides`: a list {"k=v", ...} or a map {["optimizer.lr"] = 3e-4, ...}.
-- Its output goes to RUN_DIR/run.log (run.log), from the moment the run
-- directory exists; what it printed before that (warnings while loading) is
-- printed here, and an error before it started is this function's error.
function M.start(script, overrides, opts)
  if type(script) ~= "string" then error("ms.start expects a script path, got " .. type(script), 2) end
  opts = opts or {}
  -- A fresh private directory for the two files needed until the run directory
  -- exists: unique (mkdtemp), so runs started from two consoles never share one.
  local scratch = core.private_dir("moonseed-start")
  local announce, early = scratch .. "/run-dir", scratch .. "/output"
  local argv = { core.binary(), "run", script, "--quiet", "--announce", announce, "--log-in-run-dir" }
  for k, v in pairs(overrides or {}) do
    argv[#argv + 1] = type(k) == "number" and v or (k .. "=" .. value_text(v))
  end
  local pid = core.spawn(argv, early)
  local waited, limit = 0, opts.timeout_s or 120
  while true do
    local state, code = core.status(pid)
    if state == "exited" then
      local text = read_file(early) or ""
      remove_scratch(scratch, { announce, early })
      error(("the run exited with code %s before it started:\n%s"):format(tostring(code), text), 2)
    end
    local dir = read_file(announce)
    if dir and dir ~= "" then
      dir = dir:gsub("%s+$", "")
      local ok, run = pcall(M.attach, dir)
      if ok then
        local text = read_file(early) or ""
        remove_scratch(scratch, { announce, early })
        if text ~= "" then io.write(text) end
        run.pid, run.log = pid, dir .. "/run.log"
        return run
      end
    end
    if waited >= limit then
      error(("the run did not open its control socket within %d s (its output so far: %s)"):format(limit, early), 2)
    end
    core.sleep(0.05)
    waited = waited + 0.05
  end
end

return M
