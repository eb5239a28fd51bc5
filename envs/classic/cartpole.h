// CartPole-v1 as Gymnasium 1.x defines it: a pole on a cart pushed left (0) or right (1)
// with 10 N; Euler integration with tau = 0.02 s; terminates when |x| > 2.4 or
// |theta| > 12 degrees; reward +1 on every step including the terminating one (or, with
// sutton_barto_reward, 0 per step and -1 on termination); truncated at 500 steps.
// Observation float32 [x, x_dot, theta, theta_dot]; bounds [4.8, inf, 24 deg, inf].
// get_state(): [x, x_dot, theta, theta_dot] (float64), then ClassicControlEnv's bookkeeping.
#pragma once

#include "envs/classic/classic_control_env.h"

namespace moonseed::envs {

class CartPole final : public ClassicControlEnv {
 public:
  static constexpr const char* kId = "CartPole-v1";
  static constexpr int kDefaultMaxEpisodeSteps = 500;

  explicit CartPole(int max_episode_steps = kDefaultMaxEpisodeSteps,
                    bool sutton_barto_reward = false);

 private:
  void reset_physics(Pcg64& rng, float* obs) override;
  StepResult step_physics(const ClassicAction& action, float* obs) override;
  void save_physics(double* out) const override;
  void load_physics(const double* in) override;
  void observe(float* obs) const;

  bool sutton_barto_reward_;
  double x_ = 0, x_dot_ = 0, theta_ = 0, theta_dot_ = 0;
};

}  // namespace moonseed::envs
