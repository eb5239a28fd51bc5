// The subcommands of the `moonseed` binary. Each takes the arguments after its
// name and returns the process exit code.
#pragma once

#include <string>
#include <vector>

namespace moonseed::cli {

using Args = std::vector<std::string>;

int run_command(const Args& args);
// The actor process, which the moonseed-actor binary runs (cli/actor/actor_main.cc):
// `moonseed actor ...` execs it, `moonseed run` starts it for local actors.
int actor_command(const Args& args);
// `moonseed-actor describe-env ...` (hidden): prints an env's description for the learner (envs/describe.h).
int describe_env_command(const Args& args);
int script_command(const Args& args);
int repl_command(const Args& args);
int attach_command(const Args& args);
int ctl_command(const Args& args);
int log_command(const Args& args);  // cli/launcher/log_command.cc: experience logs
// `moonseed export RUN_DIR -o FILE.pt`: the trained net as TorchScript (cli/engine/export_command.cc).
int export_command(const Args& args);
// `moonseed eval RUN_DIR`: the trained policy plays episodes, optionally filmed (cli/engine/eval_command.cc).
int eval_command(const Args& args);
// `moonseed plot RUN_DIR... -o FILE.png|.svg`: learning curves drawn by gnuplot (cli/launcher/plot_command.cc).
int plot_command(const Args& args);
// `moonseed dashboard [RUNS_DIR|RUN_DIR...]`: past runs in the browser (cli/launcher/dashboard_command.cc).
int dashboard_command(const Args& args);
// `moonseed launch slurm|k8s SCRIPT`: a Slurm batch script or Kubernetes manifests that start
// the experiment (cli/engine/launch_command.cc, docs/launch.md).
int launch_command(const Args& args);

// `moonseed ctl RUN_DIR COMMAND...` without Lua (cli/common/ctl_request.cc): sends
// the words as one request to the run's control socket, prints the result
// (exit 0) or the refusal (stderr, exit 1). Throws when the run cannot be
// reached. ctl_needs_engine(ARGS after "ctl") is true for what needs
// moonseed-engine: help, -e LUA, or too few arguments (the usage).
int ctl_request(const std::string& run_dir, const Args& words);
bool ctl_needs_engine(const Args& args);
// "runs/x/" -> "runs/x".
std::string strip_slash(std::string dir);

// True when `args` asks for help ("-h" or "--help").
inline bool wants_help(const Args& args) {
  for (const auto& a : args) {
    if (a == "-h" || a == "--help") return true;
  }
  return false;
}

// The binary `name` beside this process's own executable (build/ holds
// moonseed, moonseed-engine and moonseed-actor side by side). Throws
// std::runtime_error when /proc/self/exe cannot be read.
std::string sibling_binary(const std::string& name);
inline std::string actor_binary() { return sibling_binary("moonseed-actor"); }
inline std::string engine_binary() { return sibling_binary("moonseed-engine"); }

// Replaces this process with `binary`, passing it argv[0] = binary and then
// `args` (a null-terminated argv tail): same pid, so whoever started the
// process can still signal and wait for it. Returns only on failure, after
// printing why (as `who`: ...), with exit code 1.
int exec_binary(const std::string& binary, char** args, const char* who);

// `moonseed` with no or an unknown command, or with --help.
extern const char* const kMoonseedUsage;

}  // namespace moonseed::cli
