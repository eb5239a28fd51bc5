// MountainCar-v0 as Gymnasium 1.x defines it: push left (0), nothing (1) or right (2) with
// force 0.001 against gravity 0.0025 * cos(3 x); velocity clipped to 0.07, position to
// [-1.2, 0.6] (stopping at the left wall). Terminates when position >= 0.5 and velocity >=
// goal_velocity (default 0); reward -1 on every step; truncated at 200 steps. Observation
// float32 [position, velocity]; reset position uniform in [-0.6, -0.4], velocity 0.
// get_state(): [position, velocity] (float64), then EpisodicEnv's bookkeeping.
#pragma once

#include "envs/episodic_env.h"

namespace moonseed::envs {

class MountainCar final : public EpisodicEnv {
 public:
  static constexpr const char* kId = "MountainCar-v0";
  static constexpr int kDefaultMaxEpisodeSteps = 200;

  explicit MountainCar(int max_episode_steps = kDefaultMaxEpisodeSteps, double goal_velocity = 0);

  // A 600 x 400 picture of the state (envs/classic/render.cc).
  bool render(Image& frame) const override;

 private:
  void start_episode(void* obs) override;
  StepResult advance(const Action& action, void* obs) override;
  void save_state(double* state) const override;
  void load_state(const double* state, const Episode& episode) override;
  void observe(void* obs) const;

  double goal_velocity_;
  double position_ = 0, velocity_ = 0;
};

}  // namespace moonseed::envs
