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
// The observation's bounds: [position, velocity].
constexpr float kLow[2] = {static_cast<float>(kMinPosition), static_cast<float>(-kMaxSpeed)};
constexpr float kHigh[2] = {static_cast<float>(kMaxPosition), static_cast<float>(kMaxSpeed)};

// np.clip on a float64 scalar (a NaN stays NaN).
double clip(double x, double low, double high) { return x < low ? low : (x > high ? high : x); }

}  // namespace

MountainCar::MountainCar(int max_episode_steps, double goal_velocity)
    : EpisodicEnv({kId, float32_box({kLow[0], kLow[1]}, {kHigh[0], kHigh[1]}), discrete_space(3), max_episode_steps},
                  own_then_bookkeeping(2)),
      goal_velocity_(goal_velocity) {}

void MountainCar::start_episode(void* obs) {
  position_ = rng().uniform(-0.6, -0.4);
  velocity_ = 0;
  observe(obs);
}

StepResult MountainCar::advance(const Action& action, void* obs) {
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

void MountainCar::observe(void* obs) const {
  write_floats(obs, {static_cast<float>(position_), static_cast<float>(velocity_)});
}

void MountainCar::save_state(double* state) const {
  state[0] = position_;
  state[1] = velocity_;
}

void MountainCar::load_state(const double* state, const Episode& /*episode*/) {
  position_ = state[0];
  velocity_ = state[1];
}

}  // namespace moonseed::envs
