// A policy net's outputs over a batch of unrolls (engine/learner/unroll_batch.h), as every
// actor-critic loss needs them: one forward pass over all (T+1)*B observations (a recurrent
// net unrolled from each unroll's start state, its state zeroed where an episode starts),
// log pi(a_t|x_t) and H(pi(.|x_t)) for t < T, and V(x_t) for t <= T.
//
// Not thread-safe with respect to the model: call under the weights lock, or with a model no
// other thread writes.
#pragma once

#include <cstdint>

#include <torch/torch.h>

#include "engine/learner/unroll_batch.h"
#include "models/policy_net.h"

namespace moonseed::engine {

struct UnrollOutputs {
  torch::Tensor logpi;    // [T, B] log pi(a_t | x_t), with gradient
  torch::Tensor entropy;  // [T, B] H(pi(. | x_t)), with gradient
  torch::Tensor values;   // [T + 1, B] V(x_t), with gradient
  torch::Tensor valid;    // [T, B] float 0/1: x_t is not a final observation (no gradient)
};

// Throws std::invalid_argument, naming `who` and the field, when the batch's tensors disagree
// in shape or a recurrent net's batch lacks its start states.
UnrollOutputs unroll_outputs(models::PolicyNet& model, const UnrollBatch& batch, const char* who);

// The unrolls `index` ([n] int64, on the batch's device) of `batch`, in that order: every
// [T+1, B] field's columns and the start states' rows. frames counts the valid steps t < T.
UnrollBatch select_unrolls(const UnrollBatch& batch, const torch::Tensor& index);

}  // namespace moonseed::engine
