// Messages with every field set to a distinctive value, shared by the codec
// tests, the transport tests and the fuzz corpus.
#pragma once

#include <cstdint>
#include <vector>

#include "rpc/codec.h"
#include "rpc/messages.h"

namespace moonseed::rpc::testing {

Hello sample_hello();
Welcome sample_welcome();
// `count` envs with `obs_bytes` bytes of observation each.
StepBatch sample_step_batch(uint64_t seq, uint32_t count, uint32_t obs_bytes = 16);
ActionBatch sample_action_batch(uint64_t seq, uint32_t count);
ConfigUpdate sample_config_update();
Bye sample_bye();
ActorNotice sample_actor_notice();

// One of each message type.
std::vector<Message> all_sample_messages();

// Encoded frames for the fuzz target: every sample message in one segment and
// in segments of 2, 3 and 8 words, a StepBatch of 64 envs, and all the samples
// back to back as one stream.
std::vector<std::vector<uint8_t>> sample_frames();

}  // namespace moonseed::rpc::testing
