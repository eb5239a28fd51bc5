// `moonseed-actor describe-env --id ID [--plugin PATH] [--model PATH] [--option NAME=VALUE]...`:
// the child process in which the learner learns the spec of a plugin env (envs/describe.h).
// Not in any help text: the engine runs it, users need not.
//
// Prints the description on stdout and exits 0; on a failure prints the message (which names
// the plugin file) on stderr and exits 1. A plugin that crashes kills only this process.
#include <unistd.h>

#include <cstdio>
#include <exception>
#include <string>

#include "cli/common/commands.h"
#include "envs/describe.h"

namespace moonseed::cli {

int describe_env_command(const Args& args) {
  // The plugin's own prints go to stderr: stdout carries only the description.
  const int out = ::dup(1);
  if (out < 0 || ::dup2(2, 1) < 0) {
    std::perror("moonseed-actor describe-env: dup");
    return 2;
  }
  std::string text;
  try {
    std::string id;
    envs::EnvOptions options;
    envs::EnvFiles files;
    envs::parse_describe_arguments(args, &id, &options, &files);
    text = envs::description_text(envs::describe_here(id, options, files));
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  std::fflush(stdout);
  for (size_t done = 0; done < text.size();) {
    const ssize_t n = ::write(out, text.data() + done, text.size() - done);
    if (n <= 0) {
      std::perror("moonseed-actor describe-env: write");
      return 2;
    }
    done += static_cast<size_t>(n);
  }
  return 0;
}

}  // namespace moonseed::cli
