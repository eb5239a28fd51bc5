#include <limits.h>
#include <unistd.h>

#include <stdexcept>
#include <string>

#include "cli/commands.h"

namespace moonseed::cli {

std::string actor_binary() {
  char buf[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) throw std::runtime_error("cannot find the moonseed binary (/proc/self/exe)");
  std::string path(buf, static_cast<size_t>(n));
  return path.substr(0, path.rfind('/') + 1) + "moonseed-actor";
}

}  // namespace moonseed::cli
