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
//
// Boundary config (docs/hot-reload.md): the Welcome and every ConfigUpdate
// carry a config version and an opaque payload. Each group takes the newest
// one at its next unroll boundary: the learner's unrolls of T steps overlap by
// one observation, and all envs of a group step together, so a group's
// boundaries are its observations number 0, T, 2T, ... of a connection. The
// observation at a boundary is the first step of the next unroll: it is the
// first StepBatch stamped with the new version, and the rewards of the steps
// after it are the first the new config shapes, so every unroll is made under
// one config. A connection starts every group afresh, at a boundary.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "envs/env_set.h"
#include "envs/spec.h"
#include "rpc/messages.h"

namespace moonseed::actor {

// What the actor does with each group's step besides sending it, plugged in
// by the binary (cli/actor/actor_command.cc plugs reward shaping written in Lua);
// the actor loop knows nothing of payloads. Called from the actor's thread
// only, so implementations need no locking.
class GroupHook {
 public:
  virtual ~GroupHook() = default;
  // The actor built `num_groups` groups of envs with this spec (first
  // Welcome, or a Welcome of another run): forget every group's config.
  virtual void start(const envs::EnvSpec& spec, uint32_t num_groups) = 0;
  // `group` runs under config `config_version` from its next step on.
  // Returns "" or a problem for the learner's operator (the actor logs it and
  // sends it as an ActorNotice); the group then keeps what it ran before.
  virtual std::string apply_config(uint32_t group, uint64_t config_version, const std::string& payload) = 0;
  // The group's `count` envs stepped (or were reset when a connection
  // started: every flag kFirst); before their StepBatch goes out the hook
  // may rewrite `rewards` (count). `first_env`: the learner's number of the
  // group's first env (actor id x envs per actor + its index in the actor),
  // the others follow. `observations`: count observations of the spec,
  // env-major, those the rewards came with; `flags`: envs::StepFlag bits.
  // Returns "" or a problem as above; either way `rewards` then hold what
  // goes out (a failing hook must not leave them half written).
  virtual std::string on_step(uint32_t group, uint32_t count, uint32_t first_env, float* rewards,
                              const uint8_t* observations, const uint8_t* flags) = 0;
};

struct ActorOptions {
  std::string address;         // "unix:/path" or "tcp:host:port"
  int32_t actor_id = -1;       // -1: the learner assigns one
  std::string auth_token;
  double connect_timeout_s = 5;
  // When the learner goes away, retry with exponential backoff (0.1 s doubling
  // to 2 s) for at most this long before giving up.
  double reconnect_for_s = 60;
  // Let a learner group place this actor (Hello.any_rank): the rank at `address`
  // may send it to the rank serving the fewest envs (docs/distributed.md).
  bool any_rank = false;
  bool verbose = true;         // one line per connect/disconnect on stderr
  std::shared_ptr<GroupHook> hook;  // null: rewards go out as the envs return them
  // Builds the Welcome's `num_envs` envs; null: the built-in ones (envs::make_env) in an
  // EnvArray. A Python actor plugs its own set here (docs/own-envs-design.md).
  std::function<std::unique_ptr<envs::EnvSet>(const rpc::Welcome&)> make_envs;
};

enum class ActorExit {
  kBye,          // the learner said Bye: the run is over (a Bye with reconnect set is not an exit)
  kStopped,      // `stop` was set
  kUnreachable,  // no learner within reconnect_for_s
  kRefused,      // the learner refused the Hello (reason printed)
};

// Runs until the learner says Bye, `stop` becomes true, or the learner stays
// unreachable. Throws std::runtime_error for errors that retrying cannot fix
// (an env spec that differs from the learner's).
ActorExit run_actor(const ActorOptions& options, const std::atomic<bool>& stop);

const char* to_string(ActorExit exit);

}  // namespace moonseed::actor
