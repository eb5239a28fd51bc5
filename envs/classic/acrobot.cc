#include "envs/classic/acrobot.h"

#include <algorithm>
#include <cmath>

#include "base/constants.h"
#include "envs/classic/numpy_scalar.h"

namespace moonseed::envs {
namespace {

using base::kPi;
constexpr double kDt = 0.2;
constexpr double kLinkLength1 = 1.0;
constexpr double kLinkMass1 = 1.0;
constexpr double kLinkMass2 = 1.0;
constexpr double kLinkCom1 = 0.5;
constexpr double kLinkCom2 = 0.5;
constexpr double kLinkMoi = 1.0;
constexpr double kGravity = 9.8;
constexpr double kMaxVel1 = 4 * kPi;
constexpr double kMaxVel2 = 9 * kPi;
constexpr double kTorques[3] = {-1.0, 0.0, 1.0};

// [theta1, theta2, dtheta1, dtheta2, torque]; the torque's derivative is 0.
using Augmented = std::array<double, 5>;

// Gymnasium's _dsdt with the "book" equation for ddtheta2, operation for operation.
// Squares of the link constants are exact, so writing them as products changes nothing;
// squares of state values go through pow as Python's ** does.
Augmented derivatives(const Augmented& s) {
  const double m1 = kLinkMass1, m2 = kLinkMass2, l1 = kLinkLength1;
  const double lc1 = kLinkCom1, lc2 = kLinkCom2, i1 = kLinkMoi, i2 = kLinkMoi;
  const double a = s[4];
  const double theta1 = s[0], theta2 = s[1], dtheta1 = s[2], dtheta2 = s[3];
  const double d1 =
      m1 * (lc1 * lc1) + m2 * ((l1 * l1) + (lc2 * lc2) + 2 * l1 * lc2 * std::cos(theta2)) + i1 + i2;
  const double d2 = m2 * ((lc2 * lc2) + l1 * lc2 * std::cos(theta2)) + i2;
  const double phi2 = m2 * lc2 * kGravity * std::cos(theta1 + theta2 - kPi / 2.0);
  const double phi1 = -m2 * l1 * lc2 * py_pow(dtheta2, 2) * std::sin(theta2) -
                      2 * m2 * l1 * lc2 * dtheta2 * dtheta1 * std::sin(theta2) +
                      (m1 * lc1 + m2 * l1) * kGravity * std::cos(theta1 - kPi / 2) + phi2;
  const double ddtheta2 =
      (a + d2 / d1 * phi1 - m2 * l1 * lc2 * py_pow(dtheta1, 2) * std::sin(theta2) - phi2) /
      (m2 * (lc2 * lc2) + i2 - py_pow(d2, 2) / d1);
  const double ddtheta1 = -(d2 * ddtheta2 + phi1) / d1;
  return {dtheta1, dtheta2, ddtheta1, ddtheta2, 0.0};
}

// y + h * k, element by element (NumPy's `y0 + dt2 * k1`).
Augmented euler_point(const Augmented& y, double h, const Augmented& k) {
  Augmented out;
  for (size_t i = 0; i < y.size(); ++i) out[i] = y[i] + h * k[i];
  return out;
}

// Gymnasium's rk4 over t = [0, dt]: one classical Runge-Kutta step.
Augmented rk4_step(const Augmented& y0) {
  const double dt = kDt - 0;
  const double dt2 = dt / 2.0;
  const Augmented k1 = derivatives(y0);
  const Augmented k2 = derivatives(euler_point(y0, dt2, k1));
  const Augmented k3 = derivatives(euler_point(y0, dt2, k2));
  const Augmented k4 = derivatives(euler_point(y0, dt, k3));
  Augmented out;
  for (size_t i = 0; i < y0.size(); ++i) {
    out[i] = y0[i] + dt / 6.0 * (k1[i] + 2 * k2[i] + 2 * k3[i] + k4[i]);
  }
  return out;
}

double wrap(double x, double low, double high) {
  const double diff = high - low;
  while (x > high) x = x - diff;
  while (x < low) x = x + diff;
  return x;
}

// Python's min(max(x, low), high): max keeps x unless low > x, min keeps it unless high < it.
double bound(double x, double low, double high) {
  const double lifted = low > x ? low : x;
  return high < lifted ? high : lifted;
}

constexpr float kVel1Bound = static_cast<float>(kMaxVel1);  // the observation's bounds
constexpr float kVel2Bound = static_cast<float>(kMaxVel2);

}  // namespace

Acrobot::Acrobot(int max_episode_steps)
    : EpisodicEnv({kId,
                   float32_box({-1.f, -1.f, -1.f, -1.f, -kVel1Bound, -kVel2Bound},
                               {1.f, 1.f, 1.f, 1.f, kVel1Bound, kVel2Bound}),
                   discrete_space(3), max_episode_steps},
                  own_then_bookkeeping(4)) {}

void Acrobot::start_episode(void* obs) {
  float initial[4];
  for (float& value : initial) value = static_cast<float>(rng().uniform(-0.1, 0.1));
  for (size_t i = 0; i < 4; ++i) state_[i] = initial[i];
  // Gymnasium keeps the draws as float32; the header says how their cos/sin are rounded.
  observe(obs);
}

StepResult Acrobot::advance(const Action& action, void* obs) {
  const Augmented augmented{state_[0], state_[1], state_[2], state_[3], kTorques[action.index]};
  const Augmented next = rk4_step(augmented);
  state_[0] = wrap(next[0], -kPi, kPi);
  state_[1] = wrap(next[1], -kPi, kPi);
  state_[2] = bound(next[2], -kMaxVel1, kMaxVel1);
  state_[3] = bound(next[3], -kMaxVel2, kMaxVel2);

  StepResult result;
  result.terminated = -std::cos(state_[0]) - std::cos(state_[1] + state_[0]) > 1.0;
  result.reward = result.terminated ? 0.f : -1.f;
  observe(obs);
  return result;
}

void Acrobot::observe(void* obs) const {
  write_floats(obs, {static_cast<float>(std::cos(state_[0])), static_cast<float>(std::sin(state_[0])),
                     static_cast<float>(std::cos(state_[1])), static_cast<float>(std::sin(state_[1])),
                     static_cast<float>(state_[2]), static_cast<float>(state_[3])});
}

void Acrobot::save_state(double* state) const { std::copy(state_.begin(), state_.end(), state); }

void Acrobot::load_state(const double* state, const Episode& /*episode*/) {
  std::copy(state, state + 4, state_.begin());
}

}  // namespace moonseed::envs
