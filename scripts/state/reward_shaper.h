// Reward shaping on the actors (docs/reward-shaping.md): runs the experiment's
// `reward_shaping` Lua function once per group of envs per step, in one LuaJIT
// state owned by the actor process.
//
// The function is called as
//   reward_shaping(n, reward, obs, obs_size, terminated, truncated, prev_obs, env, step)
// with n envs; reward: float* (writable); obs: const float* or const uint8_t*
// (the env's observation dtype), n * obs_size elements, env-major: the
// observations the rewards came with (s'); terminated, truncated: const
// uint8_t*, 0 or 1 per env; prev_obs: like obs, the observations the envs'
// last actions were taken in (s; on an episode's first step, its reset
// observation: the same as obs); env: const int32_t*, the env's number as
// the learner counts env slots (first_env + i); step: const int32_t*, steps
// since the env's last reset (0 on the reset observation). Functions written
// for the first six arguments work unchanged. Each array is indexed from 0
// like an FFI pointer, but checked: an index outside 0..count-1 raises
// "exp.lua:12: reward[100031] is out of range: reward has 32 elements, 0 to
// 31" at the function's line, writing any array but reward raises an error,
// and #reward is n. The arrays are FFI cdata whose metamethods LuaJIT compiles
// into the function's loops; nothing is built per call (bench/shaping_bench
// compares them with raw pointers, Arrays::kUnchecked).
//
// Each slot keeps what prev_obs and step need between calls (the last
// observations and the steps since reset), with a function installed or not,
// so a function installed later sees them right from its first call.
//
// The state: the engine's runner chunk takes LuaJIT's `ffi` to cast the raw
// pointers, then the sandbox (scripts/lua/moonseed/sandbox.lua) removes it.
// Each function gets an environment of its own holding only the base
// functions that touch nothing outside Lua (pairs, type, error, print, ...)
// and copies of math, string, table and bit; globals it sets persist between
// its calls. The source is compiled with its chunk name ("@exp.lua") after
// first_line - 1 newlines, so errors read "exp.lua:12: ...".
//
// Slots: one per group of envs. A slot has a current function and the one it
// replaced; groups take new functions at different steps (their own unroll
// boundaries), so slots differ for a while. A function is compiled once and
// shared by the slots that install the same config.
//
// Failures are returned as text for the learner's operator, never thrown:
//   - install() of a function that does not compile leaves the slot as it was;
//   - a runtime error in shape() undoes what the function wrote, and the slot
//     goes back to its previous function, which shapes that same step (with
//     none, the step keeps the envs' rewards); the other slots running the
//     failed function drop it at their next call, without a second report.
// The constructor throws std::invalid_argument for bad sizes and
// std::runtime_error when LuaJIT cannot start.
//
// Limits: the state's memory is capped (shaping_memory_limit(); past it Lua
// raises "not enough memory", a runtime error as above). A function that never
// returns is not interrupted here: the JIT, which the hot path needs, calls no
// hooks, so the actor runs each call under a watchdog (call_watchdog.h) and
// names the function with position(). trial_error() runs a function once with
// the JIT off and a time limit, for the loader.
//
// Not thread-safe: the actor's thread owns it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/config/experiment_config.h"
#include "scripts/state/lua_state.h"

namespace moonseed::scripts {

class RewardShaper {
 public:
  enum class Observations { kFloat32, kUInt8 };
  // kUnchecked hands the function raw FFI pointers, as before bounds checks:
  // only for bench/shaping_bench's comparison.
  enum class Arrays { kChecked, kUnchecked };

  // `obs_size`: elements per observation.
  RewardShaper(int slots, Observations observations, int64_t obs_size, LuaLimits limits = shaping_limits(),
               Arrays arrays = Arrays::kChecked);

  // An actor's state: 256 MiB of Lua memory, no time limit (the watchdog's).
  static LuaLimits shaping_limits();
  ~RewardShaper();
  RewardShaper(const RewardShaper&) = delete;
  RewardShaper& operator=(const RewardShaper&) = delete;

  int slots() const { return static_cast<int>(slots_.size()); }

  // Makes `function` the slot's function from its next shape(); its current
  // one becomes its previous. An empty source means no shaping. Installing the
  // config the slot already runs changes nothing. Returns "" or, for a function
  // that does not compile, "reward_shaping does not compile: exp.lua:12: ...;
  // keeping the previous function" (or "; running without reward shaping").
  std::string install(int slot, const engine::RewardShapingConfig& function);

  // One group's step, as the actor sent it. The flags are 0 or 1 per env;
  // `first` marks a reset observation (the wire's kFirst).
  struct GroupStep {
    int n = 0;
    int32_t first_env = 0;  // the learner's number of env 0 of the group
    float* reward = nullptr;
    const void* obs = nullptr;  // n * obs_size elements
    const uint8_t* first = nullptr;
    const uint8_t* terminated = nullptr;
    const uint8_t* truncated = nullptr;
  };

  // Runs the slot's function over the step's arrays (see above). Returns ""
  // when it ran or the slot has none, else "reward_shaping failed at
  // exp.lua:12: ...; keeping the previous function" (the previous one has
  // shaped the step) or "...; running without reward shaping" (the rewards
  // are the envs'). Either way the slot then remembers the step's
  // observations as the next step's prev_obs. A slot's first step, or one
  // with another n, counts every env as just reset. Allocates nothing per
  // call once the slot has seen these buffers and n.
  std::string shape(int slot, const GroupStep& step);

  // The slot has a function that has not failed.
  bool has_function(int slot) const;

  // "exp.lua:12": where the slot's current function is written ("" for none).
  const std::string& position(int slot) const;

  // Runs `function` once, as an actor's first step of one env would (n = 1,
  // reward 0, no flags, env 0, step 0, `obs`: one observation of `obs_size`
  // elements, prev_obs the same), in a fresh state with the JIT off, the
  // memory cap and a time limit of `time_s`. "" when it returns, else what shape() would report
  // ("reward_shaping failed at exp.lua:12: ...") or the compile error.
  static std::string trial_error(const engine::RewardShapingConfig& function, Observations observations,
                                 int64_t obs_size, const void* obs, double time_s);

  // Compiles `function` as an actor would, in a fresh state: "" when it
  // compiles to a function, else Lua's message ("exp.lua:12: ..."). For
  // validation at load time.
  static std::string compile_error(const engine::RewardShapingConfig& function);

 private:
  struct Function;
  // The runner's arrays in the order of the function's arguments: reward, obs,
  // terminated, truncated, prev_obs, env, step.
  using Pointers = const void* [7];
  struct Slot {
    std::shared_ptr<Function> current;
    std::shared_ptr<Function> previous;
    // Buffers the runner has FFI pointers to; rebound when they change.
    Pointers bound = {};
    std::vector<float> saved;  // the step's rewards as they came, to restore on error
    // Between steps: what prev_obs, env and step are made of.
    int n = -1;  // envs of the last step; -1 before the first
    std::vector<uint8_t> prev_obs;
    std::vector<int32_t> env, steps;
  };

  Slot& slot_at(int slot, const char* what);
  const Slot& slot_at(int slot, const char* what) const;
  // nullptr with `error` set when the text does not compile or run to a function.
  std::shared_ptr<Function> compile(const engine::RewardShapingConfig& function, std::string* error);
  // An installed function with this config that has not failed, to share.
  std::shared_ptr<Function> find_compiled(const engine::RewardShapingConfig& function) const;
  // current <- previous (skipping a failed one), previous <- none.
  static void fall_back(Slot& s);
  // Brings the slot's prev_obs, env and steps to this step.
  void advance(Slot& s, const GroupStep& step) const;
  // The slot's function over the step: shape() without the bookkeeping.
  std::string run(int slot, Slot& s, const GroupStep& step);
  bool bind(int slot, Slot& s, const Pointers& pointers, std::string* error);
  size_t obs_bytes(int n) const { return static_cast<size_t>(n) * static_cast<size_t>(obs_size_) * element_bytes_; }
  std::string pop_error();

  LuaState lua_;  // declared first: functions unreference themselves in it when they die
  lua_State* L_;
  int64_t obs_size_;
  size_t element_bytes_;  // of one observation element: 4 (float) or 1 (uint8)
  int environment_ref_ = 0;  // runner: () -> a fresh environment table
  int bind_ref_ = 0;         // runner: (slot, reward, obs, terminated, truncated, prev_obs, env, step)
  int call_ref_ = 0;         // runner: (fn, slot, n, obs_size)
  std::vector<Slot> slots_;
};

}  // namespace moonseed::scripts
