// What actors run under: the boundary fields of an experiment (reload class
// "boundary", docs/hot-reload.md), carried to actor processes as the opaque
// payload of rpc::Welcome and rpc::ConfigUpdate. Today that is the reward
// shaping function's text.
//
// The payload is plain text, built without Lua, so the learner never touches a
// Lua state: a header line, then one record per field,
//   moonseed-actor-config 1\n
//   reward_shaping.source 57\n<57 bytes>\n
// (name, byte length, the bytes). A reader skips records it does not know, so a
// newer learner may add fields. An empty payload means every field at its
// default (no shaping).
//
// Failure: decode_actor_config returns a malformed payload (a broken or hostile
// peer) as an error value; it never throws for bad input.
// Thread-safety: pure functions.
#pragma once

#include <optional>
#include <string>

#include "engine/config/experiment_config.h"

namespace moonseed::engine {

struct ActorConfig {
  RewardShapingConfig reward_shaping;

  bool operator==(const ActorConfig& o) const { return reward_shaping == o.reward_shaping; }
  bool operator!=(const ActorConfig& o) const { return !(*this == o); }
};

ActorConfig actor_config_of(const ExperimentConfig& config);

std::string encode_actor_config(const ActorConfig& config);

// nullopt with `error` set when `payload` is not a payload written by
// encode_actor_config (of this or a later format revision with the same header).
std::optional<ActorConfig> decode_actor_config(const std::string& payload, std::string* error);

}  // namespace moonseed::engine
