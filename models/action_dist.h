// Action distributions over a PolicyNet's output: categorical for discrete
// actions, diagonal Gaussian for box actions. Which one is chosen by the
// output itself: a defined `log_std` means Gaussian.
//
// Action forms (what the engine turns into wire bytes):
//   discrete: int64 [N] indices;  box: float32 [N, A] (not clipped to the box
//   bounds: the env clips, and the log-prob stays that of the sampled value).
//
// Sampling uses torch's default generator (seed it with torch::manual_seed).
// Sampled actions never carry gradient; log-probs and entropies follow the
// caller's grad mode. Shape mismatches throw std::invalid_argument with the
// shapes. Pure functions, thread-safe.
#pragma once

#include <torch/torch.h>

#include "models/policy_net.h"

namespace moonseed::models {

struct ActionSample {
  torch::Tensor actions;  // int64 [N] or float32 [N, A]
  torch::Tensor logp;     // [N] log pi(a|x) of the sampled actions
};

ActionSample sample(const PolicyOutput& out);

// The most likely action: argmax of the logits (int64 [N]) or the Gaussian
// mean (float32 [N, A]). For evaluation; no gradient.
torch::Tensor greedy(const PolicyOutput& out);

// log pi(a|x) for given actions, [N]; Gaussian log-probs are summed over A.
torch::Tensor log_prob(const PolicyOutput& out, const torch::Tensor& actions);

// H(pi(.|x)), [N]; the Gaussian entropy is summed over A.
torch::Tensor entropy(const PolicyOutput& out);

}  // namespace moonseed::models
