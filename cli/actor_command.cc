#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>

#include "cli/commands.h"
#include "envs/actor/actor_loop.h"

namespace moonseed::cli {
namespace {

const char* kHelp =
    "usage: moonseed actor --connect ADDRESS [--actor-id N] [--auth-token T]\n"
    "                      [--reconnect-for SECONDS]\n"
    "\n"
    "Runs environments for a learner. The learner's Welcome says which env, how\n"
    "many and with which seeds; the actor only needs the address:\n"
    "  unix:/path/to/learner.sock   a learner on this host\n"
    "  tcp:HOST:PORT                a learner on another host\n"
    "\n"
    "If the learner goes away the actor reconnects with backoff for at most\n"
    "--reconnect-for seconds (default 60), then exits with code 3.\n"
    "The auth token defaults to $MOONSEED_AUTH_TOKEN; a learner started with that\n"
    "variable refuses actors without the same token.\n"
    "Exit codes: 0 the learner said bye or SIGINT/SIGTERM, 3 unreachable, 4 refused.\n";

std::atomic<bool> g_stop{false};

void on_signal(int) { g_stop = true; }

}  // namespace

int actor_command(const Args& args) {
  if (wants_help(args)) {
    std::fputs(kHelp, stdout);
    return 0;
  }
  envs::ActorOptions options;
  for (size_t i = 0; i < args.size(); ++i) {
    auto value = [&]() -> const std::string& {
      if (i + 1 >= args.size()) throw std::invalid_argument(args[i] + " needs a value");
      return args[++i];
    };
    if (args[i] == "--connect") {
      options.address = value();
    } else if (args[i] == "--actor-id") {
      options.actor_id = std::stoi(value());
    } else if (args[i] == "--auth-token") {
      options.auth_token = value();
    } else if (args[i] == "--reconnect-for") {
      options.reconnect_for_s = std::stod(value());
    } else {
      std::cerr << "moonseed actor: unknown argument '" << args[i] << "'\n\n" << kHelp;
      return 2;
    }
  }
  if (options.auth_token.empty()) {
    if (const char* token = std::getenv("MOONSEED_AUTH_TOKEN")) options.auth_token = token;
  }
  if (options.address.empty()) {
    std::cerr << "moonseed actor: --connect ADDRESS is required\n\n" << kHelp;
    return 2;
  }
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  envs::ActorExit exit = envs::run_actor(options, g_stop);
  switch (exit) {
    case envs::ActorExit::kBye:
    case envs::ActorExit::kStopped: return 0;
    case envs::ActorExit::kUnreachable: return 3;
    case envs::ActorExit::kRefused: return 4;
  }
  return 1;
}

bool wants_help(const Args& args) {
  for (const auto& a : args) {
    if (a == "-h" || a == "--help") return true;
  }
  return false;
}

}  // namespace moonseed::cli
