// The actor-learner protocol in plain C++ types. These are what the engine and
// the actor loop see; the Cap'n Proto encoding of them stays inside rpc/.
//
// Stream: Hello -> Welcome, then StepBatch -> ActionBatch (many in flight, one
// reply per batch, matched by `seq`), ConfigUpdate pushed by the learner and
// ActorNotice sent by the actor at any time, Bye from either side.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "envs/env.h"
#include "envs/spec.h"

namespace moonseed::rpc {

// 2: Welcome carries the boundary config and the unroll length, actors send
// ActorNotice. A version-1 actor would run without the learner's reward shaping.
constexpr uint32_t kProtocolVersion = 2;

struct Hello {
  uint32_t protocol_version = kProtocolVersion;
  int32_t actor_id = -1;     // requested id; -1 lets the learner choose
  std::string host;          // for logs
  int32_t pid = 0;
  std::string auth_token;    // empty on Unix sockets
  // The actor lets a learner group place it: the rank it reached may answer
  // with a Bye that redirects it to the rank serving the fewest envs.
  bool any_rank = false;
};

// Everything an actor needs to run: the learner owns the experiment.
struct Welcome {
  std::string run_id;
  int32_t actor_id = 0;
  std::string env_id;                                    // make_env id
  std::vector<std::pair<std::string, double>> env_options;
  envs::EnvSpec env_spec;    // the actor checks its envs produce exactly this spec
  uint32_t num_envs = 0;     // envs this actor runs
  uint32_t num_groups = 2;   // envs are split in groups that alternate
  uint64_t seed = 0;         // env i of this actor is seeded with seed + i at first reset
  uint64_t config_version = 0;
  // Unroll length T of the learner: each group of envs takes a new config every
  // T of its steps, at the learner's unroll boundaries. 0: at once.
  uint32_t unroll_length = 0;
  std::string payload;       // the config of `config_version`, as ConfigUpdate::payload
  envs::EnvFiles env_files;  // env.model, env.plugin (paths on the learner's host), env.python (not python_path)
  // env.wrappers in envs::wrapper_list_text's form ("" = none): the actor parses it
  // (envs::parse_wrapper_list) and wraps its envs; env_spec is already the wrapped spec.
  std::string env_wrappers;
};

// Observations of `count` consecutive envs of one actor, [env_begin, env_begin+count).
// When an episode ends, the final observation is sent with kTerminated or
// kTruncated; the learner's action for it is ignored and the next message
// for that env carries the reset observation with kFirst (Gymnasium's
// "next step" autoreset), so the final observation is never lost.
struct StepBatch {
  uint64_t seq = 0;
  uint32_t env_begin = 0;
  uint32_t count = 0;
  uint64_t config_version = 0;
  std::vector<uint8_t> observations;  // count * observation.byte_size(), env-major
  std::vector<float> rewards;         // count, reward of the previous action
  std::vector<uint8_t> flags;         // count, envs::StepFlag bits
  // Empty: `rewards` are the env's own. Else count: the env's rewards before
  // the actor's reward shaping rewrote `rewards` (docs/reward-shaping.md).
  std::vector<float> env_rewards;
};

// Actions for the envs of the StepBatch with the same `seq`.
struct ActionBatch {
  uint64_t seq = 0;
  std::vector<uint8_t> actions;  // count * action.byte_size(): int32 or float32[n]
};

// Hot configuration pushed to actors (applied at their next unroll boundary).
struct ConfigUpdate {
  uint64_t config_version = 0;
  std::string payload;  // opaque to rpc/: the learner and actor agree on it
};

// Something the actor's operator should know, printed and recorded by the
// learner (e.g. the reward shaping function failed and was set aside).
struct ActorNotice {
  uint64_t config_version = 0;  // the config the actor was running
  std::string text;
};

struct Bye {
  std::string reason;
  // The learner let this connection go but not the actor: a hung actor that
  // was replaced, a bad StepBatch. The actor reconnects with a fresh Hello
  // instead of ending, as after a lost connection.
  bool reconnect = false;
  // With reconnect: the address to connect to instead (a learner group's rank
  // with the fewest envs, for a Hello with any_rank). "" = the same one.
  std::string redirect;
};

}  // namespace moonseed::rpc
