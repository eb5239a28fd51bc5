#include "envs/classic/mountain_car_continuous.h"

#include <cmath>

#include "envs/classic/numpy_scalar.h"

namespace moonseed::envs {
namespace {

constexpr double kMinAction = -1.0;
constexpr double kMaxAction = 1.0;
constexpr double kMinPosition = -1.2;
constexpr double kMaxPosition = 0.6;
constexpr double kMaxSpeed = 0.07;
constexpr double kGoalPosition = 0.45;
constexpr double kPower = 0.0015;
// The observation's bounds: [position, velocity].
constexpr float kLow[2] = {static_cast<float>(kMinPosition), static_cast<float>(-kMaxSpeed)};
constexpr float kHigh[2] = {static_cast<float>(kMaxPosition), static_cast<float>(kMaxSpeed)};

}  // namespace

MountainCarContinuous::MountainCarContinuous(int max_episode_steps, double goal_velocity)
    : EpisodicEnv({kId, float32_box({kLow[0], kLow[1]}, {kHigh[0], kHigh[1]}),
                   float32_box({static_cast<float>(kMinAction)}, {static_cast<float>(kMaxAction)}), max_episode_steps},
                  own_then_bookkeeping(2)),
      goal_velocity_(goal_velocity) {}

void MountainCarContinuous::start_episode(void* obs) {
  position_ = rng().uniform(-0.6, -0.4);
  velocity_ = 0;
  observe(obs);
}

StepResult MountainCarContinuous::advance(const Action& action, void* obs) {
  using S = NumpyScalar;
  const NumpyKind state_kind = elapsed_steps() == 1 ? NumpyKind::kFloat64 : NumpyKind::kFloat32;
  S position{position_, state_kind};
  S velocity{velocity_, state_kind};
  const S pushed = S::float32(action.values[0]);

  // Python's min(max(a, -1.0), 1.0): the bound replaces a only when strictly beyond it,
  // and then it is a Python float.
  S force = pushed;
  if (S::python(kMinAction) > force) force = S::python(kMinAction);
  if (S::python(kMaxAction) < force) force = S::python(kMaxAction);

  const S slope = S::python(std::cos((S::python(3) * position).value));  // math.cos
  velocity = velocity + (force * S::python(kPower) - S::python(0.0025) * slope);
  if (velocity > S::python(kMaxSpeed)) velocity = S::python(kMaxSpeed);
  if (velocity < S::python(-kMaxSpeed)) velocity = S::python(-kMaxSpeed);
  position = position + velocity;
  if (position > S::python(kMaxPosition)) position = S::python(kMaxPosition);
  if (position < S::python(kMinPosition)) position = S::python(kMinPosition);
  if (position == S::python(kMinPosition) && velocity < S::python(0)) velocity = S::python(0);

  StepResult result;
  result.terminated =
      position >= S::python(kGoalPosition) && velocity >= S::python(goal_velocity_);
  double reward = result.terminated ? 100.0 : 0.0;
  reward -= py_pow(static_cast<double>(action.values[0]), 2) * 0.1;  // math.pow
  result.reward = static_cast<float>(reward);

  // Stored as a float32 array, which is also the observation.
  position_ = static_cast<float>(position.value);
  velocity_ = static_cast<float>(velocity.value);
  observe(obs);
  return result;
}

void MountainCarContinuous::observe(void* obs) const {
  write_floats(obs, {static_cast<float>(position_), static_cast<float>(velocity_)});
}

void MountainCarContinuous::save_state(double* state) const {
  state[0] = position_;
  state[1] = velocity_;
}

void MountainCarContinuous::load_state(const double* state, const Episode& /*episode*/) {
  position_ = state[0];
  velocity_ = state[1];
}

}  // namespace moonseed::envs
