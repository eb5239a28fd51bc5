#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/common/auth_token.h"
#include "cli/common/commands.h"
#include "actor/actor_loop.h"
#include "actor_api/lua_reward_shaping.h"

namespace moonseed::cli {
namespace {

const char* kHelp =
    "usage: moonseed actor --connect ADDRESS [--actor-id N] [--auth-token-file FILE]\n"
    "                      [--reconnect-for SECONDS] [--any-rank]\n"
    "       (moonseed-actor, beside the moonseed binary, takes the same arguments)\n"
    "\n"
    "Runs environments for a learner. The learner's Welcome says which env, how\n"
    "many and with which seeds; the actor only needs the address:\n"
    "  unix:/path/to/learner.sock   a learner on this host\n"
    "  tcp:HOST:PORT                a learner on another host\n"
    "The experiment's reward_shaping function comes from the learner too and\n"
    "runs here, in the actor's own LuaJIT state (docs/reward-shaping.md).\n"
    "\n"
    "With --any-rank, ADDRESS may be any rank of a learner group: the group sends\n"
    "the actor to the rank serving the fewest envs (docs/distributed.md). Without\n"
    "it the actor joins the rank at ADDRESS.\n"
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
    } else if (args[i] == "--any-rank") {
      options.any_rank = true;
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
  options.hook = actor_api::make_lua_reward_shaping();
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
