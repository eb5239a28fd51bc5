#include "envs/classic/pendulum.h"

#include <cmath>

#include "base/constants.h"
#include "envs/classic/numpy_scalar.h"

namespace moonseed::envs {
namespace {

using base::kPi;
constexpr double kMaxSpeed = 8;
constexpr float kMaxTorque = 2.0f;
constexpr double kDt = 0.05;
constexpr double kMass = 1.0;
constexpr double kLength = 1.0;

// ((x + pi) % (2 pi)) - pi with Python's float modulo: the result takes the divisor's sign.
double angle_normalize(double x) {
  const double divisor = 2 * kPi;
  double mod = std::fmod(x + kPi, divisor);
  if (mod != 0) {
    if ((divisor < 0) != (mod < 0)) mod += divisor;
  } else {
    mod = std::copysign(0.0, divisor);
  }
  return mod - kPi;
}

// np.clip, which lets a NaN through.
template <typename T>
T clip(T x, T low, T high) {
  return x < low ? low : (x > high ? high : x);
}

constexpr float kSpeedBound = static_cast<float>(kMaxSpeed);  // the observation's bound

}  // namespace

Pendulum::Pendulum(int max_episode_steps, double g)
    : EpisodicEnv({kId, float32_box({-1.f, -1.f, -kSpeedBound}, {1.f, 1.f, kSpeedBound}),
                   float32_box({-kMaxTorque}, {kMaxTorque}), max_episode_steps},
                  own_then_bookkeeping(2)),
      g_(g) {}

void Pendulum::start_episode(void* obs) {
  th_ = rng().uniform(-kPi, kPi);
  thdot_ = rng().uniform(-1.0, 1.0);
  observe(obs);
}

StepResult Pendulum::advance(const Action& action, void* obs) {
  // The action stays float32: Python floats meeting it are cast to float32 first
  // (NumPy 2), while float64 values promote it to float64.
  const float u = clip(action.values[0], -kMaxTorque, kMaxTorque);
  const double costs = py_pow(angle_normalize(th_), 2) + 0.1 * py_pow(thdot_, 2) +
                       static_cast<double>(static_cast<float>(0.001) * py_powf(u, 2.0f));

  const float torque_term = static_cast<float>(3.0 / (kMass * py_pow(kLength, 2))) * u;
  double newthdot =
      thdot_ + (3 * g_ / (2 * kLength) * std::sin(th_) + static_cast<double>(torque_term)) * kDt;
  newthdot = clip(newthdot, -kMaxSpeed, kMaxSpeed);
  const double newth = th_ + newthdot * kDt;
  th_ = newth;
  thdot_ = newthdot;

  StepResult result;
  result.reward = static_cast<float>(-costs);
  observe(obs);
  return result;
}

void Pendulum::observe(void* obs) const {
  write_floats(obs, {static_cast<float>(std::cos(th_)), static_cast<float>(std::sin(th_)), static_cast<float>(thdot_)});
}

void Pendulum::save_state(double* state) const {
  state[0] = th_;
  state[1] = thdot_;
}

void Pendulum::load_state(const double* state, const Episode& /*episode*/) {
  th_ = state[0];
  thdot_ = state[1];
}

}  // namespace moonseed::envs
