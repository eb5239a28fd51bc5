-- The sandbox of experiment scripts and recipes (see scripts/state/lua_state.h).
-- LuaState runs this file once, before any user code, when it is created with
-- Sandbox::kOn. It keeps a recipe from changing the machine by accident: it
-- removes what writes files or runs programs and keeps what only reads.
-- It is not a boundary against hostile code.

local function blocked(name)
  return function()
    error(name .. " is disabled in experiment scripts (sandbox)", 2)
  end
end

for _, name in ipairs { "execute", "exit", "remove", "rename", "tmpname" } do
  os[name] = blocked("os." .. name)
end
io.popen = blocked("io.popen")
io.tmpfile = blocked("io.tmpfile")
package.loadlib = blocked("package.loadlib")
package.cpath = ""

-- The FFI can call any C function (system, unlink, ...).
package.preload.ffi = nil
package.loaded.ffi = nil

local read_modes = { r = true, rb = true }

local open = io.open
io.open = function(path, mode)
  mode = mode or "r"
  if not read_modes[mode] then
    error(("io.open(%q, %q): experiment scripts may open files for reading only (\"r\" or \"rb\")")
      :format(tostring(path), tostring(mode)), 2)
  end
  return open(path, mode)
end

-- io.output(filename) opens the file for writing; a file handle or no argument is fine.
local output = io.output
io.output = function(file)
  if type(file) == "string" then
    error(("io.output(%q): experiment scripts may not open files for writing"):format(file), 2)
  end
  return output(file)
end

-- Text chunks only: LuaJIT does not verify bytecode, so a crafted binary chunk could corrupt memory.
local load, loadfile = load, loadfile
_G.load = function(chunk, chunkname, _, env)
  return load(chunk, chunkname, "t", env)
end
_G.loadstring = function(text, chunkname)
  return load(text, chunkname, "t")
end
_G.loadfile = function(path, _, env)
  return loadfile(path, "t", env)
end
_G.dofile = function(path)
  local chunk = assert(loadfile(path, "t"))
  return chunk()
end

-- debug.getinfo is what the DSL uses to record source lines; the rest of the
-- debug library could reach the originals kept above (debug.getupvalue).
local getinfo, traceback = debug.getinfo, debug.traceback
_G.debug = { getinfo = getinfo, traceback = traceback }
package.loaded.debug = _G.debug
