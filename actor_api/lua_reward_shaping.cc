#include "actor_api/lua_reward_shaping.h"

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "engine/config/actor_config.h"
#include "rpc/messages.h"
#include "scripts/state/call_watchdog.h"
#include "scripts/state/reward_shaper.h"

namespace moonseed::actor_api {
namespace {

// Reward shaping written in Lua (scripts/state/reward_shaper.h, one LuaJIT state for
// the process), plugged into the actor loop, which knows neither Lua nor the
// payload: decodes the learner's boundary config and hands the shaper the
// wire flags as three arrays. Every call into Lua runs under a watchdog: one
// that does not return within kShapingCallLimitS ends the process with
// kExitShapingHung, after a line in the actor's log naming the function.
class LuaRewardShaping final : public actor::GroupHook {
 public:
  LuaRewardShaping() : watchdog_(kShapingCallLimitS, &shaping_hung) {}

  void start(const envs::EnvSpec& spec, uint32_t num_groups) override {
    const auto observations = spec.observation.dtype == envs::DType::kUInt8
                                  ? scripts::RewardShaper::Observations::kUInt8
                                  : scripts::RewardShaper::Observations::kFloat32;
    shaper_ = std::make_unique<scripts::RewardShaper>(static_cast<int>(num_groups), observations,
                                                      spec.observation.numel());
    flags_.assign(num_groups, Flags{});
  }

  std::string apply_config(uint32_t group, uint64_t config_version, const std::string& payload) override {
    std::string error;
    const std::optional<engine::ActorConfig> config = engine::decode_actor_config(payload, &error);
    if (!config) return "config version " + std::to_string(config_version) + " not taken: " + error;
    // Compiling only evaluates `function ... end`, which cannot loop.
    return shaper_->install(static_cast<int>(group), config->reward_shaping);
  }

  std::string on_step(uint32_t group, uint32_t count, uint32_t first_env, float* rewards,
                      const uint8_t* observations, const uint8_t* flags) override {
    Flags& f = flags_[group];
    f.first.resize(count);  // same count every step: no allocation after the first
    f.terminated.resize(count);
    f.truncated.resize(count);
    for (uint32_t i = 0; i < count; ++i) {
      f.first[i] = (flags[i] & envs::kFirst) ? 1 : 0;
      f.terminated[i] = (flags[i] & envs::kTerminated) ? 1 : 0;
      f.truncated[i] = (flags[i] & envs::kTruncated) ? 1 : 0;
    }
    const int slot = static_cast<int>(group);
    watchdog_.begin(shaper_->position(slot));
    std::string problem = shaper_->shape(
        slot, scripts::RewardShaper::GroupStep{static_cast<int>(count), static_cast<int32_t>(first_env), rewards,
                                               observations, f.first.data(), f.terminated.data(), f.truncated.data()});
    watchdog_.end();
    return problem;
  }

 private:
  // On the watchdog's thread, while the actor's thread is stuck in Lua: the
  // line the learner quotes when it parks the slot, then the end of the process.
  static void shaping_hung(const std::string& where, double limit_s) {
    std::fprintf(stderr,
                 "moonseed actor: reward_shaping at %s ran for more than %g s; stopping this actor (exit code %d). "
                 "A reward_shaping call must return within %g s: look for a loop that never ends "
                 "(docs/reward-shaping.md)\n",
                 where.c_str(), limit_s, kExitShapingHung, limit_s);
    std::fflush(stderr);
    std::_Exit(kExitShapingHung);
  }

  scripts::CallWatchdog watchdog_;
  struct Flags {
    std::vector<uint8_t> first, terminated, truncated;
  };
  std::unique_ptr<scripts::RewardShaper> shaper_;
  std::vector<Flags> flags_;  // per group
};

}  // namespace

std::shared_ptr<actor::GroupHook> make_lua_reward_shaping() { return std::make_shared<LuaRewardShaping>(); }

}  // namespace moonseed::actor_api
