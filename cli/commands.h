// The subcommands of the `moonseed` binary. Each takes the arguments after its
// name and returns the process exit code.
#pragma once

#include <string>
#include <vector>

namespace moonseed::cli {

using Args = std::vector<std::string>;

int run_command(const Args& args);
int actor_command(const Args& args);
int script_command(const Args& args);
int repl_command(const Args& args);
int attach_command(const Args& args);
int ctl_command(const Args& args);
int log_command(const Args& args);  // cli/log_command.cc: experience logs

// True when `args` asks for help ("-h" or "--help").
bool wants_help(const Args& args);

}  // namespace moonseed::cli
