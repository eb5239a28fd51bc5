#include "scripts/reward_shaper.h"

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
local obs_ctype = ...
local ffi = require("ffi")
local cast = ffi.cast
local reward_t = ffi.typeof("float *")
local obs_t = ffi.typeof(obs_ctype)
local flags_t = ffi.typeof("const uint8_t *")
local G, ipairs, pairs = _G, ipairs, pairs

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

-- Per slot: the FFI pointers of its buffers, cast once, not per step.
local bound = {}
local function bind(slot, reward, obs, terminated, truncated)
  bound[slot] = { cast(reward_t, reward), cast(obs_t, obs), cast(flags_t, terminated), cast(flags_t, truncated) }
end

local function call(fn, slot, n, obs_size)
  local b = bound[slot]
  fn(n, b[1], b[2], obs_size, b[3], b[4])
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
  int ref = LUA_NOREF;  // the function in the registry
  bool failed = false;
};

RewardShaper::RewardShaper(int slots, Observations observations, int64_t obs_size)
    : lua_(Sandbox::kOff), L_(lua_.get()), obs_size_(obs_size) {
  if (slots < 1 || obs_size < 1) {
    throw std::invalid_argument("RewardShaper needs slots >= 1 and obs_size >= 1, got " + std::to_string(slots) +
                                " and " + std::to_string(obs_size));
  }
  if (luaL_loadbuffer(L_, kRunner, std::strlen(kRunner), "=[moonseed reward shaping]") != 0) {
    throw std::logic_error(std::string("RewardShaper: the runner does not compile: ") + lua_tostring(L_, -1));
  }
  lua_pushstring(L_, observations == Observations::kUInt8 ? "const uint8_t *" : "const float *");
  if (pcall_with_traceback(L_, 1, 3) != 0) {
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
  return text;
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

bool RewardShaper::bind(int slot, float* reward, const void* obs, const uint8_t* terminated,
                        const uint8_t* truncated, std::string* error) {
  lua_rawgeti(L_, LUA_REGISTRYINDEX, bind_ref_);
  lua_pushinteger(L_, slot);
  lua_pushlightuserdata(L_, reward);
  lua_pushlightuserdata(L_, const_cast<void*>(obs));
  lua_pushlightuserdata(L_, const_cast<uint8_t*>(terminated));
  lua_pushlightuserdata(L_, const_cast<uint8_t*>(truncated));
  if (lua_pcall(L_, 5, 0, 0) != 0) {
    *error = pop_error();
    return false;
  }
  Slot& s = slots_[static_cast<size_t>(slot)];
  s.bound[0] = reward;
  s.bound[1] = obs;
  s.bound[2] = terminated;
  s.bound[3] = truncated;
  return true;
}

std::string RewardShaper::shape(int slot, int n, float* reward, const void* obs, const uint8_t* terminated,
                                const uint8_t* truncated) {
  Slot& s = slot_at(slot, "shape");
  if (s.current && s.current->failed) fall_back(s);  // it failed in another slot, already reported
  if (!s.current || n <= 0) return "";
  if (s.bound[0] != reward || s.bound[1] != obs || s.bound[2] != terminated || s.bound[3] != truncated) {
    std::string error;
    if (!bind(slot, reward, obs, terminated, truncated, &error)) {
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

std::string RewardShaper::compile_error(const engine::RewardShapingConfig& function) {
  RewardShaper probe(1, Observations::kFloat32, 1);
  std::string error;
  return probe.compile(function, &error) ? "" : error;
}

}  // namespace moonseed::scripts
