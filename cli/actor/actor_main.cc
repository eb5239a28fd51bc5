// moonseed-actor: the actor process (cli/actor/actor_command.cc). A binary of its
// own so that an actor is what it should be, a thin loop around envs: it
// links envs, rpc and the Lua reward shaper, not LibTorch or the learner, so
// it starts in milliseconds and a restarted actor rejoins at once.
// `moonseed actor ARGS...` runs it with the same arguments.
#include <cstdio>
#include <cstring>
#include <exception>

#include "cli/common/build_info.h"
#include "cli/common/commands.h"

int main(int argc, char** argv) {
  if (argc == 2 && (!std::strcmp(argv[1], "--version") || !std::strcmp(argv[1], "version"))) {
    std::printf("moonseed-actor %s\n", moonseed::cli::build_text().c_str());
    return 0;
  }
  if (argc >= 2 && !std::strcmp(argv[1], "describe-env")) {
    return moonseed::cli::describe_env_command(moonseed::cli::Args(argv + 2, argv + argc));
  }
  try {
    return moonseed::cli::actor_command(moonseed::cli::Args(argv + 1, argv + argc));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "moonseed actor: %s\n", e.what());
    return 1;
  }
}
