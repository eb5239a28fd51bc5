// moonseed: the command-line entry point, without LibTorch. It serves the
// commands that need neither Lua nor LibTorch itself (`log`, `plot`, and `ctl RUN
// COMMAND` without -e), turns `actor` into the
// moonseed-actor binary and every other command into moonseed-engine (the
// learner, the Lua API and the consoles, which link LibTorch), each by exec in
// this same process. So `moonseed actor --help` or `moonseed log ls` start in
// milliseconds and a few MB, and LibTorch is loaded only by what uses it.
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include "cli/common/commands.h"

int main(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "-h") || !std::strcmp(argv[1], "--help") ||
      !std::strcmp(argv[1], "help")) {
    std::fputs(moonseed::cli::kMoonseedUsage, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  const std::string command = argv[1];
  try {
    const moonseed::cli::Args args(argv + 2, argv + argc);
    if (command == "log") return moonseed::cli::log_command(args);
    if (command == "plot") return moonseed::cli::plot_command(args);
    if (command == "dashboard") return moonseed::cli::dashboard_command(args);
    if (command == "ctl" && !moonseed::cli::ctl_needs_engine(args)) {
      return moonseed::cli::ctl_request(moonseed::cli::strip_slash(args[0]), moonseed::cli::Args(args.begin() + 1, args.end()));
    }
    if (command == "actor") return moonseed::cli::exec_binary(moonseed::cli::actor_binary(), argv + 2, "moonseed actor");
    for (const char* engine_command : {"run", "script", "repl", "attach", "ctl", "export", "eval", "launch", "--version", "version"}) {
      if (command == engine_command) {
        return moonseed::cli::exec_binary(moonseed::cli::engine_binary(), argv + 1, "moonseed");
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "moonseed %s: %s\n", command.c_str(), e.what());
    return 1;
  }
  std::fprintf(stderr, "moonseed: unknown command '%s'\n\n%s", command.c_str(), moonseed::cli::kMoonseedUsage);
  return 2;
}
