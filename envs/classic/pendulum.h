// Pendulum-v1 as Gymnasium 1.x defines it: torque = action clipped to [-2, 2];
// thdot += (3 g / (2 l) sin(th) + 3 / (m l^2) u) dt, clipped to 8; th += thdot dt with
// dt = 0.05, m = l = 1, g = 10 by default. Reward -(angle_normalize(th)^2 + 0.1 thdot^2 +
// 0.001 u^2) from the state before the step; never terminates; truncated at 200 steps.
// Observation float32 [cos th, sin th, thdot]; reset th uniform in [-pi, pi], thdot in
// [-1, 1]. The float32 action enters the arithmetic as NumPy 2 promotes it.
// get_state(): [theta, theta_dot] (float64), then EpisodicEnv's bookkeeping.
#pragma once

#include "envs/episodic_env.h"

namespace moonseed::envs {

class Pendulum final : public EpisodicEnv {
 public:
  static constexpr const char* kId = "Pendulum-v1";
  static constexpr int kDefaultMaxEpisodeSteps = 200;
  static constexpr double kDefaultGravity = 10.0;

  explicit Pendulum(int max_episode_steps = kDefaultMaxEpisodeSteps, double g = kDefaultGravity);

  // A 500 x 500 picture of the state (envs/classic/render.cc).
  bool render(Image& frame) const override;

 private:
  void start_episode(void* obs) override;
  StepResult advance(const Action& action, void* obs) override;
  void save_state(double* state) const override;
  void load_state(const double* state, const Episode& episode) override;
  void observe(void* obs) const;

  double g_;
  double th_ = 0, thdot_ = 0;
};

}  // namespace moonseed::envs
