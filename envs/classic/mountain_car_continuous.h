// MountainCarContinuous-v0 as Gymnasium 1.x defines it: force = action clipped to [-1, 1],
// velocity += force * 0.0015 - 0.0025 * cos(3 x), clipped to 0.07; position clipped to
// [-1.2, 0.6]. Terminates when position >= 0.45 and velocity >= goal_velocity (default 0);
// reward -0.1 * action^2 per step (unclipped action) plus 100 on the terminating step;
// truncated at 999 steps. Observation float32 [position, velocity]; reset position
// uniform in [-0.6, -0.4], velocity 0.
// get_state(): [position, velocity] (float64), then EpisodicEnv's bookkeeping.
//
// Gymnasium keeps this state as float32 between steps (float64 right after reset) and mixes
// it with the float32 action; the arithmetic follows NumPy 2 promotion (see numpy_scalar.h).
#pragma once

#include "envs/episodic_env.h"

namespace moonseed::envs {

class MountainCarContinuous final : public EpisodicEnv {
 public:
  static constexpr const char* kId = "MountainCarContinuous-v0";
  static constexpr int kDefaultMaxEpisodeSteps = 999;

  explicit MountainCarContinuous(int max_episode_steps = kDefaultMaxEpisodeSteps,
                                 double goal_velocity = 0);

  // A 600 x 400 picture of the state, as MountainCar's (envs/classic/render.cc).
  bool render(Image& frame) const override;

 private:
  void start_episode(void* obs) override;
  StepResult advance(const Action& action, void* obs) override;
  void save_state(double* state) const override;
  void load_state(const double* state, const Episode& episode) override;
  void observe(void* obs) const;

  double goal_velocity_;
  // float64 values right after reset, float32 values (held in doubles) after any step.
  double position_ = 0, velocity_ = 0;
};

}  // namespace moonseed::envs
