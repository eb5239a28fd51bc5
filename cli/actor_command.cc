#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/auth_token.h"
#include "cli/commands.h"
#include "engine/config/actor_config.h"
#include "actor/actor_loop.h"
#include "rpc/messages.h"
#include "scripts/call_watchdog.h"
#include "scripts/reward_shaper.h"

namespace moonseed::cli {
namespace {

constexpr double kShapingCallLimitS = 1;
constexpr int kExitShapingHung = 5;

// Reward shaping written in Lua (scripts/reward_shaper.h, one LuaJIT state for
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

const char* kHelp =
    "usage: moonseed actor --connect ADDRESS [--actor-id N] [--auth-token-file FILE]\n"
    "                      [--reconnect-for SECONDS]\n"
    "       (moonseed-actor, beside the moonseed binary, takes the same arguments)\n"
    "\n"
    "Runs environments for a learner. The learner's Welcome says which env, how\n"
    "many and with which seeds; the actor only needs the address:\n"
    "  unix:/path/to/learner.sock   a learner on this host\n"
    "  tcp:HOST:PORT                a learner on another host\n"
    "The experiment's reward_shaping function comes from the learner too and\n"
    "runs here, in the actor's own LuaJIT state (docs/reward-shaping.md).\n"
    "\n"
    "If the learner goes away the actor reconnects with backoff for at most\n"
    "--reconnect-for seconds (default 60), then exits with code 3.\n"
    "The auth token is the first line of --auth-token-file FILE (keep it mode 600),\n"
    "else $MOONSEED_AUTH_TOKEN; a learner started with a token refuses actors\n"
    "without the same one. There is no --auth-token: ps would show it to every user.\n"
    "A reward_shaping call that runs for more than 1 s ends the actor with code 5,\n"
    "after a line naming the function.\n"
    "Exit codes: 0 the learner said bye or SIGINT/SIGTERM, 3 unreachable, 4 refused,\n"
    "5 reward_shaping ran too long.\n";

std::atomic<bool> g_stop{false};

void on_signal(int) { g_stop = true; }

}  // namespace

int actor_command(const Args& args) {
  if (wants_help(args)) {
    std::fputs(kHelp, stdout);
    return 0;
  }
  actor::ActorOptions options;
  std::string token_file;
  for (size_t i = 0; i < args.size(); ++i) {
    auto value = [&]() -> const std::string& {
      if (i + 1 >= args.size()) throw std::invalid_argument(args[i] + " needs a value");
      return args[++i];
    };
    if (args[i] == "--connect") {
      options.address = value();
    } else if (args[i] == "--actor-id") {
      options.actor_id = std::stoi(value());
    } else if (args[i] == "--auth-token-file") {
      token_file = value();
    } else if (args[i] == "--auth-token") {
      std::cerr << "moonseed actor: " << auth_token_on_command_line_message() << "\n";
      return 2;
    } else if (args[i] == "--reconnect-for") {
      options.reconnect_for_s = std::stod(value());
    } else {
      std::cerr << "moonseed actor: unknown argument '" << args[i] << "'\n\n" << kHelp;
      return 2;
    }
  }
  try {
    options.auth_token = auth_token(token_file);
  } catch (const std::exception& e) {
    std::cerr << "moonseed actor: " << e.what() << "\n";
    return 2;
  }
  if (options.address.empty()) {
    std::cerr << "moonseed actor: --connect ADDRESS is required\n\n" << kHelp;
    return 2;
  }
  options.hook = std::make_shared<LuaRewardShaping>();
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  actor::ActorExit exit = actor::run_actor(options, g_stop);
  switch (exit) {
    case actor::ActorExit::kBye:
    case actor::ActorExit::kStopped: return 0;
    case actor::ActorExit::kUnreachable: return 3;
    case actor::ActorExit::kRefused: return 4;
  }
  return 1;
}

}  // namespace moonseed::cli
