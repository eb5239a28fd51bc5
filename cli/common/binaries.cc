// Finding and starting the project's other binaries, and the top-level usage
// text both `moonseed` and `moonseed-engine` print.
#include <limits.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "cli/common/commands.h"

namespace moonseed::cli {

const char* const kMoonseedUsage =
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
    "  export RUN_DIR -o FILE.pt   the trained policy as a TorchScript module for PyTorch\n"
    "  eval RUN_DIR [--video F]    the trained policy plays episodes (returns, video)\n"
    "  plot RUN_DIR... -o FILE.png learning curves (seeds of one config: mean and band) as PNG or SVG\n"
    "  dashboard [RUNS_DIR...]     past runs' curves, events and configs in the browser\n"
    "  launch slurm|k8s SCRIPT     a Slurm batch script or Kubernetes manifests for the experiment\n"
    "  version, --version          the version, git commit, LibTorch and device of this build\n"
    "\n"
    "`moonseed COMMAND --help` tells more about one command.\n";

std::string sibling_binary(const std::string& name) {
  char buf[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) throw std::runtime_error("cannot find the moonseed binary (/proc/self/exe)");
  std::string path(buf, static_cast<size_t>(n));
  return path.substr(0, path.rfind('/') + 1) + name;
}

int exec_binary(const std::string& binary, char** args, const char* who) {
  std::vector<char*> argv = {const_cast<char*>(binary.c_str())};
  for (char** a = args; *a != nullptr; ++a) argv.push_back(*a);
  argv.push_back(nullptr);
  ::execv(binary.c_str(), argv.data());
  std::fprintf(stderr, "%s: cannot run %s: %s\n", who, binary.c_str(), std::strerror(errno));
  return 1;
}

}  // namespace moonseed::cli
