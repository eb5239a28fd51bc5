// A 64-bit hash of the bytes of a list of tensors: how the ranks of a learner
// group check that their weights are still equal bit for bit
// (engine/learner/step_sync.h). Not a cryptographic hash: it catches a rank
// that drifted, not one that lies.
#pragma once

#include <cstdint>
#include <vector>

#include <torch/torch.h>

namespace moonseed::engine {

// FNV-1a over each tensor's dtype, shape and bytes (copied to the CPU when on
// another device), in order. Equal lists give equal hashes on every host of
// the same byte order.
uint64_t tensors_hash(const std::vector<torch::Tensor>& tensors);

}  // namespace moonseed::engine
