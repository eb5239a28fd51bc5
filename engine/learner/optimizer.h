// Building the learner's optimizer from OptimizerConfig, changing its learning
// rate while it runs (schedules, hot reload), and gradient-norm clipping.
//
// The optimizer keeps references to the parameter tensors it was given: the
// caller keeps the model alive as long as the optimizer. Not thread-safe: one
// training thread steps the optimizer, under the weights lock.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "engine/config/experiment_config.h"

namespace moonseed::engine {

// "adam" (lr, eps) or "rmsprop" (lr, alpha, eps, momentum). Throws
// std::invalid_argument naming an unknown kind or a non-positive lr / eps.
std::unique_ptr<torch::optim::Optimizer> make_optimizer(const OptimizerConfig& config,
                                                        std::vector<torch::Tensor> params);

// "adam" or "rmsprop" for optimizers make_optimizer builds, "unknown" otherwise.
std::string optimizer_kind(const torch::optim::Optimizer& optimizer);

// Sets the learning rate of every parameter group. Throws std::invalid_argument
// for a negative lr.
void set_learning_rate(torch::optim::Optimizer& optimizer, double lr);

// Sets every parameter's gradient to zeros (allocating those it lacks): a
// learner group's step for which this rank has no batch (Agent::train_without_batch).
void zero_gradients(const std::vector<torch::Tensor>& params);

// Rescales the gradients so that their global L2 norm is at most max_norm and
// returns the norm before clipping. max_norm == 0 leaves the gradients alone
// (the norm is still returned, for metrics). Parameters without a gradient are
// skipped. A non-finite norm is returned as is and nothing is rescaled: the
// caller decides whether to skip the step.
double clip_grad_norm(const std::vector<torch::Tensor>& params, double max_norm);

}  // namespace moonseed::engine
