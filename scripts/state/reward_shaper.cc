#include "scripts/state/reward_shaper.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <stdexcept>

#include "base/check.h"

namespace moonseed::scripts {
namespace {

// The engine's side of the state. It runs before the sandbox, so it still
// reaches ffi; user functions only ever see the tables environment() builds.
// Returns environment, bind, call.
constexpr const char* kRunner = R"lua(
local obs_ctype, checked = ...
local ffi = require("ffi")
local cast, metatype, new, typeof = ffi.cast, ffi.metatype, ffi.new, ffi.typeof
local reward_t = typeof("float *")
local obs_t = typeof(obs_ctype)
local flags_t = typeof("const uint8_t *")
local index_t = typeof("const int32_t *")
local G, ipairs, pairs, type, error, tostring, format = _G, ipairs, pairs, type, error, tostring, string.format

local base = { "assert", "error", "getmetatable", "ipairs", "next", "pairs", "pcall", "print",
               "rawequal", "rawget", "rawset", "select", "setmetatable", "tonumber", "tostring",
               "type", "unpack", "xpcall" }
local libraries = { "bit", "math", "string", "table" }

local function environment()
  local env = {}
  for _, name in ipairs(base) do env[name] = G[name] end
  for _, name in ipairs(libraries) do
    local copy = {}
    for k, v in pairs(G[name]) do copy[k] = v end
    env[name] = copy
  end
  env._G = env
  return env
end

-- Raised at the user's line (level 3: this function, the metamethod, the user's code).
local function bad_index(name, i, n)
  if type(i) ~= "number" then
    error(format("%s[%s]: an index must be a number, got %s", name, tostring(i), type(i)), 3)
  end
  error(format("%s[%s] is out of range: %s has %d elements, 0 to %d", name, tostring(i), name, n, n - 1), 3)
end

-- An array the user's function indexes like a pointer, checked: a cdata of
-- its own type whose metamethods reach the buffer through upvalues, so no
-- field or pointer is left for the function to go around the check with.
-- Returns the array and set(pointer or nil, count).
local function checked_array(name, ctype, writable)
  local p, n = nil, 0
  local mt = {
    __index = function(_, i)
      if type(i) == "number" and i >= 0 and i < n then return p[i] end
      bad_index(name, i, n)
    end,
    __len = function() return n end,
    __tostring = function() return name end,
  }
  if writable then
    mt.__newindex = function(_, i, v)
      if type(i) == "number" and i >= 0 and i < n then
        p[i] = v
        return
      end
      bad_index(name, i, n)
    end
  else
    mt.__newindex = function() error(name .. " cannot be written; only reward can", 2) end
  end
  local array = new(metatype(typeof("struct { uint8_t unused; }"), mt))
  local function set(pointer, count)
    if pointer ~= nil then p = cast(ctype, pointer) end
    n = count
  end
  return array, set
end

-- Per slot: its arrays, made once and pointed at the buffers when they change.
-- In the order of the function's arguments after obs_size: each with its name,
-- its C type, writable or not, and its count per env (0: obs_size).
local arrays = {
  { "reward", reward_t, true, 1 },
  { "obs", obs_t, false, 0 },
  { "terminated", flags_t, false, 1 },
  { "truncated", flags_t, false, 1 },
  { "prev_obs", obs_t, false, 0 },
  { "env", index_t, false, 1 },
  { "step", index_t, false, 1 },
}
local bound = {}
local function bind(slot, ...)
  local pointers = { ... }
  if not checked then
    local b = {}
    for k, a in ipairs(arrays) do b[k] = cast(a[2], pointers[k]) end
    bound[slot] = b
    return
  end
  local b = bound[slot]
  if not b then
    b = { n = -1, sets = {} }
    for k, a in ipairs(arrays) do b[k], b.sets[k] = checked_array(a[1], a[2], a[3]) end
    bound[slot] = b
  end
  for k = 1, #arrays do b.sets[k](pointers[k], 0) end
  b.n = -1
end

local function call(fn, slot, n, obs_size)
  local b = bound[slot]
  if checked and b.n ~= n then
    for k, a in ipairs(arrays) do b.sets[k](nil, a[4] == 0 and n * obs_size or n) end
    b.n = n
  end
  fn(n, b[1], b[2], obs_size, b[3], b[4], b[5], b[6], b[7])
end

return environment, bind, call
)lua";

// "exp.lua:12: ..." (Lua's position prefix) or not.
bool has_position(const std::string& message) {
  size_t colon = message.find(':');
  while (colon != std::string::npos && colon > 0) {
    size_t digits = colon + 1;
    while (digits < message.size() && std::isdigit(static_cast<unsigned char>(message[digits]))) ++digits;
    if (digits > colon + 1 && digits < message.size() && message[digits] == ':') return true;
    colon = message.find(':', colon + 1);
  }
  return false;
}

}  // namespace

struct RewardShaper::Function {
  engine::RewardShapingConfig config;
  std::string position;  // "exp.lua:12"
  int ref = LUA_NOREF;  // the function in the registry
  bool failed = false;
};

LuaLimits RewardShaper::shaping_limits() {
  LuaLimits limits;
  limits.memory_bytes = size_t{256} << 20;
  return limits;
}

RewardShaper::RewardShaper(int slots, Observations observations, int64_t obs_size, LuaLimits limits,
                           Arrays arrays)
    : lua_(Sandbox::kOff, limits),
      L_(lua_.get()),
      obs_size_(obs_size),
      element_bytes_(observations == Observations::kUInt8 ? 1 : sizeof(float)) {
  if (slots < 1 || obs_size < 1) {
    throw std::invalid_argument("RewardShaper needs slots >= 1 and obs_size >= 1, got " + std::to_string(slots) +
                                " and " + std::to_string(obs_size));
  }
  if (luaL_loadbuffer(L_, kRunner, std::strlen(kRunner), "=[moonseed reward shaping]") != 0) {
    throw std::logic_error(std::string("RewardShaper: the runner does not compile: ") + lua_tostring(L_, -1));
  }
  lua_pushstring(L_, observations == Observations::kUInt8 ? "const uint8_t *" : "const float *");
  lua_pushboolean(L_, arrays == Arrays::kChecked);
  if (pcall_with_traceback(L_, 2, 3) != 0) {
    throw std::logic_error(std::string("RewardShaper: the runner failed: ") + lua_tostring(L_, -1));
  }
  call_ref_ = luaL_ref(L_, LUA_REGISTRYINDEX);
  bind_ref_ = luaL_ref(L_, LUA_REGISTRYINDEX);
  environment_ref_ = luaL_ref(L_, LUA_REGISTRYINDEX);
  apply_sandbox(L_);
  slots_.resize(static_cast<size_t>(slots));
}

RewardShaper::~RewardShaper() = default;

RewardShaper::Slot& RewardShaper::slot_at(int slot, const char* what) {
  return const_cast<Slot&>(static_cast<const RewardShaper*>(this)->slot_at(slot, what));
}

const RewardShaper::Slot& RewardShaper::slot_at(int slot, const char* what) const {
  base::require_index(slot, slots(), "RewardShaper::", what, ": slot");
  return slots_[static_cast<size_t>(slot)];
}

std::string RewardShaper::pop_error() {
  const char* message = lua_tostring(L_, -1);
  std::string text = message ? message : std::string("(error object is a ") + luaL_typename(L_, -1) + " value)";
  lua_pop(L_, 1);
  return text + lua_.limit_note(text);
}

std::shared_ptr<RewardShaper::Function> RewardShaper::compile(const engine::RewardShapingConfig& function,
                                                              std::string* error) {
  // The padding puts the `function` keyword on its own line of its file.
  std::string text(static_cast<size_t>(std::max(function.first_line, 1) - 1), '\n');
  text += "return ";
  text += function.source;
  const std::string chunk_name = function.chunk_name.empty() ? "=reward_shaping" : function.chunk_name;
  const int top = lua_gettop(L_);
  if (luaL_loadbufferx(L_, text.data(), text.size(), chunk_name.c_str(), "t") != 0) {
    *error = pop_error();
    return nullptr;
  }
  lua_rawgeti(L_, LUA_REGISTRYINDEX, environment_ref_);
  if (lua_pcall(L_, 0, 1, 0) != 0) {
    *error = pop_error();
    lua_settop(L_, top);
    return nullptr;
  }
  lua_setfenv(L_, -2);
  if (lua_pcall(L_, 0, 1, 0) != 0) {
    *error = pop_error();
    return nullptr;
  }
  if (!lua_isfunction(L_, -1)) {
    *error = chunk_name + ": reward_shaping's text evaluates to a " + luaL_typename(L_, -1) + ", not a function";
    lua_settop(L_, top);
    return nullptr;
  }
  lua_State* L = L_;
  auto compiled = std::shared_ptr<Function>(new Function, [L](Function* f) {
    luaL_unref(L, LUA_REGISTRYINDEX, f->ref);
    delete f;
  });
  compiled->config = function;
  const std::string& chunk = function.chunk_name;
  compiled->position = (chunk.size() > 1 && (chunk[0] == '@' || chunk[0] == '=') ? chunk.substr(1) : chunk) + ":" +
                       std::to_string(function.first_line);
  compiled->ref = luaL_ref(L_, LUA_REGISTRYINDEX);
  return compiled;
}

std::shared_ptr<RewardShaper::Function> RewardShaper::find_compiled(
    const engine::RewardShapingConfig& function) const {
  for (const Slot& s : slots_) {
    for (const auto& f : {s.current, s.previous}) {
      if (f && !f->failed && f->config == function) return f;
    }
  }
  return nullptr;
}

void RewardShaper::fall_back(Slot& s) {
  s.current = s.previous && !s.previous->failed ? std::move(s.previous) : nullptr;
  s.previous = nullptr;
}

std::string RewardShaper::install(int slot, const engine::RewardShapingConfig& function) {
  Slot& s = slot_at(slot, "install");
  const bool running = s.current && !s.current->failed;
  if (function.source.empty()) {
    s.previous = std::move(s.current);
    s.current = nullptr;
    return "";
  }
  if (running && s.current->config == function) return "";
  std::shared_ptr<Function> compiled = find_compiled(function);
  if (!compiled) {
    std::string error;
    compiled = compile(function, &error);
    if (!compiled) {
      return "reward_shaping does not compile: " + error +
             (running ? "; keeping the previous function" : "; running without reward shaping");
    }
  }
  s.previous = std::move(s.current);
  s.current = std::move(compiled);
  return "";
}

bool RewardShaper::bind(int slot, Slot& s, const Pointers& pointers, std::string* error) {
  lua_rawgeti(L_, LUA_REGISTRYINDEX, bind_ref_);
  lua_pushinteger(L_, slot);
  for (const void* p : pointers) lua_pushlightuserdata(L_, const_cast<void*>(p));
  if (lua_pcall(L_, 8, 0, 0) != 0) {
    *error = pop_error();
    return false;
  }
  std::copy(std::begin(pointers), std::end(pointers), s.bound);
  return true;
}

void RewardShaper::advance(Slot& s, const GroupStep& step) const {
  const size_t n = static_cast<size_t>(step.n);
  const bool fresh = s.n != step.n;
  if (fresh) {
    s.n = step.n;
    s.prev_obs.resize(obs_bytes(step.n));
    s.env.resize(n);
    s.steps.resize(n);
  }
  if (fresh || s.env[0] != step.first_env) {
    for (size_t i = 0; i < n; ++i) s.env[i] = step.first_env + static_cast<int32_t>(i);
  }
  const size_t bytes = obs_bytes(1);
  const auto* obs = static_cast<const uint8_t*>(step.obs);
  for (size_t i = 0; i < n; ++i) {
    if (fresh || step.first[i]) {
      s.steps[i] = 0;
      std::memcpy(&s.prev_obs[i * bytes], obs + i * bytes, bytes);
    } else {
      ++s.steps[i];
    }
  }
}

std::string RewardShaper::shape(int slot, const GroupStep& step) {
  Slot& s = slot_at(slot, "shape");
  if (step.n <= 0) return "";
  advance(s, step);
  std::string problem = run(slot, s, step);
  std::memcpy(s.prev_obs.data(), step.obs, obs_bytes(step.n));  // the next step's prev_obs
  return problem;
}

std::string RewardShaper::run(int slot, Slot& s, const GroupStep& step) {
  if (s.current && s.current->failed) fall_back(s);  // it failed in another slot, already reported
  if (!s.current) return "";
  const int n = step.n;
  float* reward = step.reward;
  const Pointers now = {reward, step.obs, step.terminated, step.truncated, s.prev_obs.data(), s.env.data(),
                        s.steps.data()};
  if (!std::equal(std::begin(now), std::end(now), s.bound)) {
    std::string error;
    if (!bind(slot, s, now, &error)) {
      throw std::logic_error("RewardShaper: binding buffers failed: " + error);
    }
  }
  if (s.saved.size() < static_cast<size_t>(n)) s.saved.resize(static_cast<size_t>(n));
  std::memcpy(s.saved.data(), reward, sizeof(float) * static_cast<size_t>(n));

  std::string first_error;
  while (s.current) {
    lua_rawgeti(L_, LUA_REGISTRYINDEX, call_ref_);
    lua_rawgeti(L_, LUA_REGISTRYINDEX, s.current->ref);
    lua_pushinteger(L_, slot);
    lua_pushinteger(L_, n);
    lua_pushinteger(L_, static_cast<lua_Integer>(obs_size_));
    if (lua_pcall(L_, 4, 0, 0) == 0) break;
    // Undo what it wrote before failing; the previous function, if any,
    // shapes this same step, so no step goes out half shaped or unshaped.
    const std::string message = pop_error();
    if (first_error.empty()) first_error = message;
    std::memcpy(reward, s.saved.data(), sizeof(float) * static_cast<size_t>(n));
    s.current->failed = true;
    fall_back(s);
  }
  if (first_error.empty()) return "";
  return std::string("reward_shaping failed") + (has_position(first_error) ? " at " : ": ") + first_error +
         (s.current ? "; keeping the previous function" : "; running without reward shaping");
}

bool RewardShaper::has_function(int slot) const {
  const Slot& s = slot_at(slot, "has_function");
  return s.current && !s.current->failed;
}

const std::string& RewardShaper::position(int slot) const {
  static const std::string none;
  const Slot& s = slot_at(slot, "position");
  return s.current ? s.current->position : none;
}

std::string RewardShaper::trial_error(const engine::RewardShapingConfig& function, Observations observations,
                                      int64_t obs_size, const void* obs, double time_s) {
  LuaLimits limits = shaping_limits();
  limits.time_s = time_s;
  RewardShaper probe(1, observations, obs_size, limits);
  std::string error = probe.install(0, function);
  if (error.empty()) {
    float reward = 0;
    const uint8_t first = 1, no_flag = 0;
    error = probe.shape(0, GroupStep{1, 0, &reward, obs, &first, &no_flag, &no_flag});
  }
  // The probe had no function before: say what happened, not what it falls back to.
  const std::string fallback = "; running without reward shaping";
  if (error.size() >= fallback.size() && error.compare(error.size() - fallback.size(), fallback.size(), fallback) == 0) {
    error.resize(error.size() - fallback.size());
  }
  return error;
}

std::string RewardShaper::compile_error(const engine::RewardShapingConfig& function) {
  RewardShaper probe(1, Observations::kFloat32, 1);
  std::string error;
  return probe.compile(function, &error) ? "" : error;
}

}  // namespace moonseed::scripts
