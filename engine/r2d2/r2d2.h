// The learning math of R2D2 (Kapturowski et al. 2019), exactly as the paper
// states it: value rescaling, n-step double-Q targets over a stored sequence,
// the sequence loss, sequence priorities, and Ape-X per-env exploration.
//
// Step convention (engine/learner/unroll_batch.h): a stream of L steps, time-major
// [L, B]. Step t holds x_t, the action a_t taken there, the reward r_t it
// produced and whether a_t ended the episode (terminated_t / truncated_t);
// valid_t = 0 where x_t is a final observation (no action was taken there).
//
// n-step targets. For each t with valid_t = 1 and t < L-1, rewards
// r_t, r_{t+1}, ... are summed with discounts gamma^i until the first of
//   - n rewards summed;
//   - a terminated step (its reward included; no bootstrap);
//   - a truncated step (its reward included; bootstrap from the next step,
//     which holds the final observation);
//   - the next step is L-1 (bootstrap from x_{L-1}): the last steps of a
//     stream use shorter returns, and r_{L-1} is never summed.
// With k rewards summed the bootstrap step is s = t + k, and
//   y_t = G_t + gamma^k h^-1(bootstrap_q_s)     (no bootstrap after termination)
// where bootstrap_q_s = Q_target(x_s, argmax_a Q_online(x_s, a)) in h-space,
// as the network outputs it. The target is h(y_t) (h-space); mask_t = 1 where
// a target exists, 0 elsewhere (there the target is 0). Termination wins when
// a step is both terminated and truncated.
//
// Loss and priorities over the trace steps t >= burn_in with mask_t = 1,
// delta_t = target_t - q_taken_t:
//   sequence loss l_b = MEAN over those steps of 0.5 delta_t^2 (0 when there is
//     none). A mean, as seed_rl's r2d2 takes over time: the loss scale, and so
//     the learning rate, does not depend on the trace length or on how many
//     steps an episode end masks out (the engine's V-trace losses do the same).
//   loss = mean_b w_b l_b (w: importance weights; the learner clips the grad
//     norm to 40 afterwards).
//   priority p_b = eta max_t |delta_t| + (1 - eta) mean_t |delta_t| (0 when
//     there is no such step).
//
// Tensor versions are what the learner uses: they vectorise over B and loop
// over at most n steps. The std::vector versions are a double-precision
// reference for one stream (B = 1), used by the Lua API and the tests.
//
// Errors: std::invalid_argument naming the offending tensor and its shape, or
// the parameter and its value. Targets and priorities carry no gradient; the
// loss has a gradient through q_taken only.
//
// Pure functions, thread-safe.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <vector>

namespace moonseed::engine {

constexpr double kValueRescaleEps = 1e-3;

// h(x) = sign(x) (sqrt(|x| + 1) - 1) + eps x. eps must be > 0.
double value_rescale(double x, double eps = kValueRescaleEps);
// h^-1(x) = sign(x) (((sqrt(1 + 4 eps (|x| + 1 + eps)) - 1) / (2 eps))^2 - 1).
double inverse_value_rescale(double x, double eps = kValueRescaleEps);
// Elementwise on a floating tensor, in its dtype; keeps the autograd graph.
torch::Tensor value_rescale(const torch::Tensor& x, double eps = kValueRescaleEps);
torch::Tensor inverse_value_rescale(const torch::Tensor& x, double eps = kValueRescaleEps);

struct NStepParams {
  int64_t n = 5;                  // >= 1
  double gamma = 0.997;           // in [0, 1]
  double eps = kValueRescaleEps;  // > 0
};

// All [L, B] floating tensors of one dtype; flags are 0/1.
struct NStepInput {
  torch::Tensor rewards;
  torch::Tensor terminated;
  torch::Tensor truncated;
  torch::Tensor valid;
  torch::Tensor bootstrap_q;  // h-space Q_target(x_s, argmax_a Q_online(x_s, a)) for every s
};

struct NStepTargets {
  torch::Tensor targets;  // [L, B] h(y_t), 0 where mask is 0
  torch::Tensor mask;     // [L, B] 1 where a target exists
};

NStepTargets n_step_targets(const NStepInput& in, const NStepParams& params);

// One stream; every vector has the same length L.
struct NStepStream {
  std::vector<double> rewards;
  std::vector<double> terminated;
  std::vector<double> truncated;
  std::vector<double> valid;
  std::vector<double> bootstrap_q;
};

struct NStepStreamTargets {
  std::vector<double> targets;
  std::vector<double> mask;
};

NStepStreamTargets n_step_targets(const NStepStream& in, const NStepParams& params);

// [L, B] floating tensors; burn_in in [0, L].
struct TdInput {
  torch::Tensor targets;  // h-space; treated as a constant (detached)
  torch::Tensor q_taken;  // Q_online(x_t, a_t), h-space
  torch::Tensor mask;     // 0/1
  int64_t burn_in = 0;    // the first burn_in steps carry no loss and no priority
};

// [B]: l_b as defined above, differentiable through q_taken.
torch::Tensor sequence_losses(const TdInput& in);
// Scalar mean_b w_b l_b. importance_weights: [B], or undefined for all ones.
torch::Tensor r2d2_loss(const TdInput& in, const torch::Tensor& importance_weights);
// [B], no gradient. eta in [0, 1].
torch::Tensor sequence_priorities(const TdInput& in, double eta = 0.9);

// One sequence; every vector has the same length L.
struct TdStream {
  std::vector<double> targets;
  std::vector<double> q_taken;
  std::vector<double> mask;
  int64_t burn_in = 0;
};

double sequence_loss(const TdStream& in);
double sequence_priority(const TdStream& in, double eta = 0.9);

// Ape-X exploration of env i out of N: base^(1 + alpha i / (N - 1)); base when
// N = 1. Throws std::invalid_argument for N < 1 or i outside [0, N).
double ape_x_epsilon(int64_t i, int64_t n, double base = 0.4, double alpha = 7);

}  // namespace moonseed::engine
