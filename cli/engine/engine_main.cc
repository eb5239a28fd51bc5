// moonseed-engine: the commands that use LibTorch or the engine's Lua API
// (run, script, repl, attach, ctl, export, eval, launch, version). `moonseed` (cli/launcher/main.cc) execs it with
// the same arguments; it is not meant to be called by hand.
#include <cstdio>
#include <exception>
#include <string>

#include "base/heap.h"
#include "cli/common/commands.h"
#include "cli/engine/version.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fputs(moonseed::cli::kMoonseedUsage, stderr);
    return 2;
  }
  // Training and evaluation reuse freed tensor memory instead of faulting it in again (base/heap.h).
  moonseed::base::keep_freed_memory();
  const std::string command = argv[1];
  if (command == "--version" || command == "version") return moonseed::cli::version_command();
  moonseed::cli::Args args(argv + 2, argv + argc);
  try {
    if (command == "run") return moonseed::cli::run_command(args);
    if (command == "script") return moonseed::cli::script_command(args);
    if (command == "repl") return moonseed::cli::repl_command(args);
    if (command == "attach") return moonseed::cli::attach_command(args);
    if (command == "ctl") return moonseed::cli::ctl_command(args);
    if (command == "export") return moonseed::cli::export_command(args);
    if (command == "eval") return moonseed::cli::eval_command(args);
    if (command == "launch") return moonseed::cli::launch_command(args);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "moonseed %s: %s\n", command.c_str(), e.what());
    return 1;
  }
  std::fprintf(stderr, "moonseed: unknown command '%s'\n\n%s", command.c_str(), moonseed::cli::kMoonseedUsage);
  return 2;
}
