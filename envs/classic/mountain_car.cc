#include "envs/classic/mountain_car.h"

#include <cmath>

namespace moonseed::envs {
namespace {

constexpr double kMinPosition = -1.2;
constexpr double kMaxPosition = 0.6;
constexpr double kMaxSpeed = 0.07;
constexpr double kGoalPosition = 0.5;
constexpr double kForce = 0.001;
constexpr double kGravity = 0.0025;

// np.clip on a float64 scalar (a NaN stays NaN).
double clip(double x, double low, double high) { return x < low ? low : (x > high ? high : x); }

EnvSpec mountain_car_spec(int max_episode_steps) {
  EnvSpec spec;
  spec.id = MountainCar::kId;
  spec.observation = float32_box({static_cast<float>(kMinPosition), static_cast<float>(-kMaxSpeed)},
                                 {static_cast<float>(kMaxPosition), static_cast<float>(kMaxSpeed)});
  spec.action = discrete_space(3);
  spec.max_episode_steps = max_episode_steps;
  return spec;
}

}  // namespace

MountainCar::MountainCar(int max_episode_steps, double goal_velocity)
    : ClassicControlEnv(mountain_car_spec(max_episode_steps), 2), goal_velocity_(goal_velocity) {}

void MountainCar::reset_physics(Pcg64& rng, float* obs) {
  position_ = rng.uniform(-0.6, -0.4);
  velocity_ = 0;
  observe(obs);
}

StepResult MountainCar::step_physics(const ClassicAction& action, float* obs) {
  velocity_ += (action.index - 1) * kForce + std::cos(3 * position_) * (-kGravity);
  velocity_ = clip(velocity_, -kMaxSpeed, kMaxSpeed);
  position_ += velocity_;
  position_ = clip(position_, kMinPosition, kMaxPosition);
  if (position_ == kMinPosition && velocity_ < 0) velocity_ = 0;

  StepResult result;
  result.terminated = position_ >= kGoalPosition && velocity_ >= goal_velocity_;
  result.reward = -1.f;
  observe(obs);
  return result;
}

void MountainCar::observe(float* obs) const {
  obs[0] = static_cast<float>(position_);
  obs[1] = static_cast<float>(velocity_);
}

void MountainCar::save_physics(double* out) const {
  out[0] = position_;
  out[1] = velocity_;
}

void MountainCar::load_physics(const double* in) {
  position_ = in[0];
  velocity_ = in[1];
}

}  // namespace moonseed::envs
