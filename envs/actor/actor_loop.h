// The actor process: a thin loop around many environments that streams their
// observations to the learner and applies the actions it sends back.
//
// The envs are split into groups of consecutive envs. Each group has one
// StepBatch in flight; while the learner runs inference for one group, the
// actor steps another, so env CPU and inference overlap.
//
// Episode ends follow "next step" autoreset (docs/architecture.md): the final
// observation is sent with kTerminated/kTruncated, the action for it is
// ignored, and the reset observation follows with kFirst.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

namespace moonseed::envs {

struct ActorOptions {
  std::string address;         // "unix:/path" or "tcp:host:port"
  int32_t actor_id = -1;       // -1: the learner assigns one
  std::string auth_token;
  double connect_timeout_s = 5;
  // When the learner goes away, retry with exponential backoff (0.1 s doubling
  // to 2 s) for at most this long before giving up.
  double reconnect_for_s = 60;
  bool verbose = true;         // one line per connect/disconnect on stderr
};

enum class ActorExit {
  kBye,          // the learner said Bye: the run is over
  kStopped,      // `stop` was set
  kUnreachable,  // no learner within reconnect_for_s
  kRefused,      // the learner refused the Hello (reason printed)
};

// Runs until the learner says Bye, `stop` becomes true, or the learner stays
// unreachable. Throws std::runtime_error for errors that retrying cannot fix
// (an env spec that differs from the learner's).
ActorExit run_actor(const ActorOptions& options, const std::atomic<bool>& stop);

const char* to_string(ActorExit exit);

}  // namespace moonseed::envs
