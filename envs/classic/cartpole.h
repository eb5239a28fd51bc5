// CartPole-v1 as Gymnasium 1.x defines it: a pole on a cart pushed left (0) or right (1)
// with 10 N; Euler integration with tau = 0.02 s; terminates when |x| > 2.4 or
// |theta| > 12 degrees; reward +1 on every step including the terminating one (or, with
// sutton_barto_reward, 0 per step and -1 on termination); truncated at 500 steps.
// Observation float32 [x, x_dot, theta, theta_dot]; bounds [4.8, inf, 24 deg, inf].
// get_state(): [x, x_dot, theta, theta_dot] (float64), then EpisodicEnv's bookkeeping.
#pragma once

#include "envs/episodic_env.h"

namespace moonseed::envs {

class CartPole : public EpisodicEnv {
 public:
  static constexpr const char* kId = "CartPole-v1";
  static constexpr int kDefaultMaxEpisodeSteps = 500;

  explicit CartPole(int max_episode_steps = kDefaultMaxEpisodeSteps, bool sutton_barto_reward = false);

  // A 600 x 400 picture of the state (envs/classic/render.cc).
  bool render(Image& frame) const override;

 protected:
  // For CartPoleNoVelocity: the same dynamics under `spec`, observing [x, theta] only
  // unless `observe_velocity`.
  CartPole(EnvSpec spec, bool sutton_barto_reward, bool observe_velocity);

 private:
  void start_episode(void* obs) override;
  StepResult advance(const Action& action, void* obs) override;
  void save_state(double* state) const override;
  void load_state(const double* state, const Episode& episode) override;
  void observe(void* obs) const;

  bool sutton_barto_reward_;
  bool observe_velocity_;
  double x_ = 0, x_dot_ = 0, theta_ = 0, theta_dot_ = 0;
};

}  // namespace moonseed::envs
