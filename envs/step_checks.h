// Preconditions every episodic env checks in step(), with one wording:
// stepping before the first reset() or after the episode ended is a caller
// bug (std::logic_error), a discrete action outside [0, n) is bad input
// (std::invalid_argument). Both messages start with the env's id.
#pragma once

#include <cstdint>

namespace moonseed::envs {

// Throws std::logic_error unless an episode is running.
void require_running(const char* id, bool ever_reset, bool running, int64_t elapsed_steps);
// The int32 index at `action`; throws std::invalid_argument outside [0, n).
int32_t discrete_action(const char* id, const void* action, int32_t n);

}  // namespace moonseed::envs
