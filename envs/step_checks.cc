#include "envs/step_checks.h"

#include <cstring>
#include <stdexcept>
#include <string>

#include "base/check.h"

namespace moonseed::envs {

void require_running(const char* id, bool ever_reset, bool running, int64_t elapsed_steps) {
  if (running) return;
  throw std::logic_error(std::string(id) + " step: " +
                         (!ever_reset ? std::string("called before the first reset()")
                                      : "the episode ended after " + std::to_string(elapsed_steps) +
                                            " steps; call reset() first"));
}

int32_t discrete_action(const char* id, const void* action, int32_t n) {
  int32_t index = 0;
  std::memcpy(&index, action, sizeof(index));
  base::require_index(index, n, std::string(id) + " step: action");
  return index;
}

}  // namespace moonseed::envs
