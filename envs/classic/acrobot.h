// Acrobot-v1 as Gymnasium 1.x defines it: two links, torque -1, 0 or +1 (actions 0, 1, 2)
// on the joint between them; RK4 over dt = 0.2 s with the "book" dynamics; angles wrapped
// to [-pi, pi], velocities bounded to 4 pi and 9 pi. Terminates when the free end is above
// the bar (-cos(t1) - cos(t1 + t2) > 1); reward -1 per step, 0 on the terminating step;
// truncated at 500 steps. Observation float32
// [cos t1, sin t1, cos t2, sin t2, dt1, dt2].
// get_state(): [theta1, theta2, dtheta1, dtheta2] (float64), then EpisodicEnv's bookkeeping.
//
// Gymnasium draws the reset state with uniform(-0.1, 0.1) and casts it to float32; its
// first observation takes np.cos/np.sin of those float32 values in float32. We compute them
// in double and round, which is the correctly rounded value; NumPy's own float32 sin/cos
// can differ from it by one ulp for a few inputs in ten thousand.
#pragma once

#include <array>

#include "envs/episodic_env.h"

namespace moonseed::envs {

class Acrobot final : public EpisodicEnv {
 public:
  static constexpr const char* kId = "Acrobot-v1";
  static constexpr int kDefaultMaxEpisodeSteps = 500;

  explicit Acrobot(int max_episode_steps = kDefaultMaxEpisodeSteps);

  // A 500 x 500 picture of the state (envs/classic/render.cc).
  bool render(Image& frame) const override;

 private:
  void start_episode(void* obs) override;
  StepResult advance(const Action& action, void* obs) override;
  void save_state(double* state) const override;
  void load_state(const double* state, const Episode& episode) override;
  void observe(void* obs) const;

  std::array<double, 4> state_{};  // theta1, theta2, dtheta1, dtheta2
};

}  // namespace moonseed::envs
