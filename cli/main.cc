// moonseed: the command-line entry point. It wires the rooms together and
// owns no logic of its own beyond argument handling.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/version.h"

namespace {

const char* kUsage =
    "moonseed: distributed deep RL in the SEED style, scripted in Lua\n"
    "\n"
    "usage: moonseed COMMAND [ARGS...]\n"
    "\n"
    "commands:\n"
    "  run SCRIPT [key=value...]   train: a learner plus the script's local actors\n"
    "  run --resume RUN_DIR        continue a run from its newest checkpoint\n"
    "  actor --connect ADDRESS     an actor process for a learner (local or remote)\n"
    "  script FILE.lua [ARGS...]   run a Lua file with the engine's Lua API loaded\n"
    "  repl [FILE.lua...]          an interactive LuaJIT console with the engine's Lua API\n"
    "  attach RUN_DIR              a console connected to a running run\n"
    "  ctl RUN_DIR COMMAND         one control request to a running run (status, set, stop...)\n"
    "  log COMMAND PATH...         read experience logs: info, ls, cat, verify, merge\n"
    "  version, --version          the version, git commit, LibTorch and device of this build\n"
    "\n"
    "`moonseed COMMAND --help` tells more about one command.\n";

// `moonseed actor ARGS...` becomes the moonseed-actor binary, in this
// process (same pid, so whoever started it can signal and wait for it):
// actors load neither LibTorch nor the learner and start in milliseconds.
int exec_actor(char** args) {
  const std::string binary = moonseed::cli::actor_binary();
  std::vector<char*> argv = {const_cast<char*>(binary.c_str())};
  for (char** a = args; *a != nullptr; ++a) argv.push_back(*a);
  argv.push_back(nullptr);
  ::execv(binary.c_str(), argv.data());
  std::fprintf(stderr, "moonseed actor: cannot run %s: %s\n", binary.c_str(), std::strerror(errno));
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "-h") || !std::strcmp(argv[1], "--help") ||
      !std::strcmp(argv[1], "help")) {
    std::fputs(kUsage, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  const std::string command = argv[1];
  if (command == "--version" || command == "version") return moonseed::cli::version_command();
  moonseed::cli::Args args(argv + 2, argv + argc);
  try {
    if (command == "run") return moonseed::cli::run_command(args);
    if (command == "actor") return exec_actor(argv + 2);
    if (command == "script") return moonseed::cli::script_command(args);
    if (command == "repl") return moonseed::cli::repl_command(args);
    if (command == "attach") return moonseed::cli::attach_command(args);
    if (command == "ctl") return moonseed::cli::ctl_command(args);
    if (command == "log") return moonseed::cli::log_command(args);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "moonseed %s: %s\n", command.c_str(), e.what());
    return 1;
  }
  std::fprintf(stderr, "moonseed: unknown command '%s'\n\n%s", command.c_str(), kUsage);
  return 2;
}
