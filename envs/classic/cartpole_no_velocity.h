// CartPoleNoVelocity-v1: CartPole-v1 with the velocities hidden, a memory task for recurrent
// agents (the POMDP of the R2D2 paper's partially observed control tasks). Dynamics, reward,
// termination, the time limit (500 by default), seeding and get_state()/set_state() are those
// of the CartPole it wraps, bit for bit; only the observation differs:
// float32 [x, theta] (CartPole's elements 0 and 2), bounds [4.8, 24 deg]. A feed-forward agent
// sees position and angle but not where they are going; a recurrent one can infer it.
//
// Errors: as CartPole's, rethrown with the same type and this env's id in front.
// Not thread-safe: one thread at a time, as Env says.
#pragma once

#include <array>
#include <optional>
#include <vector>

#include "envs/classic/cartpole.h"

namespace moonseed::envs {

class CartPoleNoVelocity final : public Env {
 public:
  static constexpr const char* kId = "CartPoleNoVelocity-v1";
  static constexpr int kDefaultMaxEpisodeSteps = CartPole::kDefaultMaxEpisodeSteps;

  explicit CartPoleNoVelocity(int max_episode_steps = kDefaultMaxEpisodeSteps,
                              bool sutton_barto_reward = false);

  const EnvSpec& spec() const override { return spec_; }
  void reset(std::optional<uint64_t> seed, void* obs) override;
  StepResult step(const void* action, void* obs) override;
  // CartPole's state: [x, x_dot, theta, theta_dot, bookkeeping...]; interchangeable with a
  // CartPole-v1 of the same options.
  std::vector<double> get_state() const override;
  void set_state(const std::vector<double>& state) override;

 private:
  // Writes the observed elements of `full` (CartPole's observation) to `obs`.
  static void observe(const std::array<float, 4>& full, void* obs);

  CartPole cartpole_;
  EnvSpec spec_;
};

}  // namespace moonseed::envs
