#include "envs/classic/cartpole.h"

#include <cmath>
#include <limits>
#include <utility>

#include "base/constants.h"
#include "envs/classic/cartpole_no_velocity.h"

namespace moonseed::envs {
namespace {

// Gymnasium's constants; derived ones are computed the way Python computes them.
constexpr double kGravity = 9.8;
constexpr double kMassCart = 1.0;
constexpr double kMassPole = 0.1;
constexpr double kTotalMass = kMassPole + kMassCart;
constexpr double kLength = 0.5;  // half the pole's length
constexpr double kPoleMassLength = kMassPole * kLength;
constexpr double kForceMag = 10.0;
constexpr double kTau = 0.02;
using base::kPi;
constexpr double kThetaThreshold = 12 * 2 * kPi / 360;
constexpr double kXThreshold = 2.4;
constexpr float kInf = std::numeric_limits<float>::infinity();

constexpr float kXBound = static_cast<float>(kXThreshold * 2);  // the observation's bounds
constexpr float kThetaBound = static_cast<float>(kThetaThreshold * 2);

}  // namespace

CartPole::CartPole(int max_episode_steps, bool sutton_barto_reward)
    : CartPole({kId, float32_box({-kXBound, -kInf, -kThetaBound, -kInf}, {kXBound, kInf, kThetaBound, kInf}),
                discrete_space(2), max_episode_steps},
               sutton_barto_reward, true) {}

CartPole::CartPole(EnvSpec spec, bool sutton_barto_reward, bool observe_velocity)
    : EpisodicEnv(std::move(spec), own_then_bookkeeping(4)),
      sutton_barto_reward_(sutton_barto_reward),
      observe_velocity_(observe_velocity) {}

CartPoleNoVelocity::CartPoleNoVelocity(int max_episode_steps, bool sutton_barto_reward)
    : CartPole({kId, float32_box({-kXBound, -kThetaBound}, {kXBound, kThetaBound}), discrete_space(2),
                max_episode_steps},
               sutton_barto_reward, false) {}

void CartPole::start_episode(void* obs) {
  x_ = rng().uniform(-0.05, 0.05);
  x_dot_ = rng().uniform(-0.05, 0.05);
  theta_ = rng().uniform(-0.05, 0.05);
  theta_dot_ = rng().uniform(-0.05, 0.05);
  observe(obs);
}

StepResult CartPole::advance(const Action& action, void* obs) {
  const double force = action.index == 1 ? kForceMag : -kForceMag;
  const double costheta = std::cos(theta_);
  const double sintheta = std::sin(theta_);
  // np.square is a plain multiplication (unlike ** 2, which calls pow).
  const double temp = (force + kPoleMassLength * (theta_dot_ * theta_dot_) * sintheta) / kTotalMass;
  const double thetaacc = (kGravity * sintheta - costheta * temp) /
                          (kLength * (4.0 / 3.0 - kMassPole * (costheta * costheta) / kTotalMass));
  const double xacc = temp - kPoleMassLength * thetaacc * costheta / kTotalMass;

  x_ = x_ + kTau * x_dot_;
  x_dot_ = x_dot_ + kTau * xacc;
  theta_ = theta_ + kTau * theta_dot_;
  theta_dot_ = theta_dot_ + kTau * thetaacc;

  StepResult result;
  result.terminated = x_ < -kXThreshold || x_ > kXThreshold || theta_ < -kThetaThreshold ||
                      theta_ > kThetaThreshold;
  if (sutton_barto_reward_) {
    result.reward = result.terminated ? -1.f : 0.f;
  } else {
    result.reward = 1.f;
  }
  observe(obs);
  return result;
}

void CartPole::observe(void* obs) const {
  const auto x = static_cast<float>(x_), theta = static_cast<float>(theta_);
  if (observe_velocity_) {
    write_floats(obs, {x, static_cast<float>(x_dot_), theta, static_cast<float>(theta_dot_)});
  } else {
    write_floats(obs, {x, theta});
  }
}

void CartPole::save_state(double* state) const {
  state[0] = x_;
  state[1] = x_dot_;
  state[2] = theta_;
  state[3] = theta_dot_;
}

void CartPole::load_state(const double* state, const Episode& /*episode*/) {
  x_ = state[0];
  x_dot_ = state[1];
  theta_ = state[2];
  theta_dot_ = state[3];
}

}  // namespace moonseed::envs
