// The `r2d2` section of an experiment (R2D2; engine/config/section_registry.h): its fields,
// schema rows and rules, registered from here. No LibTorch: the launcher and the actor read it.
#pragma once

#include "engine/config/experiment_config.h"

namespace moonseed::engine {

// R2D2 (algo = "r2d2"; docs/r2d2.md, docs/r2d2-design.md). The model is
// the declared layer list; a final ms.nn.lstm(n) becomes the recurrent core.
// Optimizer settings are the global `optimizer` section (R2D2 recipes set Adam
// lr 1e-4, eps 1e-3), and optimizer.max_grad_norm clips the gradient.
struct R2d2Config {
  static constexpr const char* kName = "r2d2";

  int burn_in = 40;                  // steps replayed without gradient before the trace
  int trace = 80;                    // steps trained on per sequence
  int period = 40;                   // steps between the starts of an env's sequences
  int n_step = 5;
  double gamma = 0.997;
  double eta = 0.9;                  // priority = eta max |td| + (1 - eta) mean |td|
  double rescale_eps = 1e-3;         // epsilon of the value rescaling h
  int target_period = 2500;          // optimizer steps between target-network copies
  int batch = 64;                    // sequences per training step
  int64_t capacity = 10000;          // sequences the replay holds
  int64_t min_fill = 500;            // sequences inserted before training starts
  double samples_per_insert = 0;     // sampled / inserted sequences; 0 = no limit
  std::string insert_priorities = "acting";  // "acting" | "learner": who gives new sequences their priority
  double priority_exponent = 0.9;    // alpha
  double importance_exponent = 0.6;  // beta
  double epsilon_base = 0.4;         // Ape-X: env i of N explores with base^(1 + alpha i / (N - 1))
  double epsilon_alpha = 7;
  double eval_epsilon = 1e-3;        // Learner::evaluate (not greedy)
  int head_hidden = 512;             // hidden units of each dueling stream; 0 = linear heads
  bool dueling = true;
  bool prev_action_reward = true;    // feed a_{t-1} (one-hot) and r_{t-1} to the core
};

}  // namespace moonseed::engine
