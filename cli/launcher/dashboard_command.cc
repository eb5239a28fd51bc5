// `moonseed dashboard [RUNS_DIR|RUN_DIR...] [--listen HOST:PORT] [--host NAME]... [--auth-token-file FILE]`:
// the dashboard (docs/dashboard.md) over past runs, to compare them, until
// Ctrl-C. Served by the `moonseed` binary itself: no Lua, no LibTorch.
#include <signal.h>

#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "cli/common/auth_token.h"
#include "cli/common/commands.h"
#include "curves/runs.h"
#include "dashboard/server.h"

namespace moonseed::cli {
namespace {

constexpr const char* kUsage =
    "usage: moonseed dashboard [RUNS_DIR|RUN_DIR...] [--listen HOST:PORT] [--host NAME]...\n"
    "                          [--auth-token-file FILE]\n"
    "\n"
    "Serves the dashboard over past runs until Ctrl-C: their metrics on shared charts (x in frames\n"
    "or wall time, mean and band across runs of one name), events and configs. A RUN_DIR is a\n"
    "directory with metrics.jsonl; any other directory is searched below for runs (as moonseed plot\n"
    "does). Default: runs/.\n"
    "\n"
    "  --listen HOST:PORT      where to serve (default 127.0.0.1:0: this host, a free port);\n"
    "                          beyond this host only with an auth token\n"
    "  --host NAME             on loopback, also answer requests addressed to NAME (e.g. a name\n"
    "                          an SSH tunnel keeps); repeatable; others get 403\n"
    "  --auth-token-file FILE  the token a browser must give beyond this host (else\n"
    "                          $MOONSEED_AUTH_TOKEN); see docs/security.md\n";

}  // namespace

int dashboard_command(const Args& args) {
  if (wants_help(args)) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  std::string listen = "127.0.0.1:0";
  std::string token_file;
  std::vector<std::string> paths;
  std::string hosts;  // --host NAME, each
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--host" && i + 1 < args.size()) {
      hosts += (hosts.empty() ? "" : ",") + args[++i];
    } else if ((args[i] == "--listen" || args[i] == "--auth-token-file") && i + 1 < args.size()) {
      (args[i] == "--listen" ? listen : token_file) = args[i + 1];
      ++i;
    } else if (args[i] == "--auth-token") {
      std::fprintf(stderr, "moonseed dashboard: %s\n", auth_token_on_command_line_message().c_str());
      return 2;
    } else if (!args[i].empty() && args[i][0] == '-') {
      std::fprintf(stderr, "moonseed dashboard: unknown or incomplete option '%s'\n\n%s", args[i].c_str(), kUsage);
      return 2;
    } else {
      paths.push_back(args[i]);
    }
  }
  dashboard::ServerOptions options;
  try {
    options = dashboard::ServerOptions::with_hosts(hosts);
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "moonseed dashboard: --host %s\n", e.what() + std::strlen("dashboard.hosts: "));
    return 2;
  }
  if (paths.empty()) paths.push_back("runs");
  const std::vector<std::string> runs = curves::find_run_dirs(paths);  // as `moonseed plot` finds them
  // Ctrl-C and SIGTERM are waited for below; blocked before the server's threads start.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  dashboard::Server server(runs, auth_token(token_file), options);
  const std::string url = server.start(listen);
  std::fprintf(stderr, "moonseed: dashboard of %zu run%s on %s (Ctrl-C stops it)\n", runs.size(),
               runs.size() == 1 ? "" : "s", url.c_str());
  int sig = 0;
  sigwait(&stop_signals, &sig);
  server.stop();
  return 0;
}

}  // namespace moonseed::cli
