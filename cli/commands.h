// The subcommands of the `moonseed` binary. Each takes the arguments after its
// name and returns the process exit code.
#pragma once

#include <string>
#include <vector>

namespace moonseed::cli {

using Args = std::vector<std::string>;

int run_command(const Args& args);
// The actor process, which the moonseed-actor binary runs (cli/actor_main.cc):
// `moonseed actor ...` execs it, `moonseed run` starts it for local actors.
int actor_command(const Args& args);
int script_command(const Args& args);
int repl_command(const Args& args);
int attach_command(const Args& args);
int ctl_command(const Args& args);
int log_command(const Args& args);  // cli/log_command.cc: experience logs

// True when `args` asks for help ("-h" or "--help").
inline bool wants_help(const Args& args) {
  for (const auto& a : args) {
    if (a == "-h" || a == "--help") return true;
  }
  return false;
}

// The moonseed-actor binary beside this process's own executable. Throws
// std::runtime_error when /proc/self/exe cannot be read.
std::string actor_binary();

}  // namespace moonseed::cli
