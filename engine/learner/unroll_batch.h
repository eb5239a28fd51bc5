// A training batch of B unrolls of T+1 steps, stacked time-major. Produced by
// the prefetcher from completed unrolls, consumed by the trainer.
#pragma once

#include <torch/torch.h>

namespace moonseed::engine {

// Step t of an unroll: observation x_t, the action a_t taken there, the
// behaviour policy's log mu(a_t|x_t), and what the action produced: reward r_t
// and whether it ended the episode. The last step (t = T) only contributes
// x_T for bootstrapping; it is also step 0 of the env's next unroll.
struct UnrollBatch {
  torch::Tensor observations;    // [T+1, B, obs...] float32 or uint8
  torch::Tensor actions;         // [T+1, B] int64 (discrete) or [T+1, B, A] float32 (box)
  torch::Tensor behaviour_logp;  // [T+1, B] float32
  torch::Tensor rewards;         // [T+1, B] float32
  torch::Tensor terminated;      // [T+1, B] float32 0/1
  torch::Tensor truncated;       // [T+1, B] float32 0/1
  torch::Tensor valid;           // [T+1, B] float32: 0 where x_t is a final observation
  torch::Tensor policy_version;  // [T+1, B] int64: optimizer steps when a_t was chosen
  // A recurrent policy's inputs at step 0 (undefined otherwise): state [B, H] float32 each, the
  // previous action ([B] int64, -1 for none; [B, A] float32, zeros for none) and reward [B].
  torch::Tensor start_h, start_c, start_prev_action, start_prev_reward;
  int64_t frames = 0;            // valid env steps in the batch (t < T)

  int64_t T() const { return observations.size(0) - 1; }
  int64_t B() const { return observations.size(1); }
  UnrollBatch to(const torch::Device& device, bool non_blocking) const;
};

}  // namespace moonseed::engine
