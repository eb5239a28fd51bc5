#include "envs/classic/cartpole.h"

#include <cmath>
#include <limits>

#include "base/constants.h"

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

EnvSpec cartpole_spec(int max_episode_steps) {
  EnvSpec spec;
  spec.id = CartPole::kId;
  const float x_bound = static_cast<float>(kXThreshold * 2);
  const float theta_bound = static_cast<float>(kThetaThreshold * 2);
  spec.observation = float32_box({-x_bound, -kInf, -theta_bound, -kInf},
                                 {x_bound, kInf, theta_bound, kInf});
  spec.action = discrete_space(2);
  spec.max_episode_steps = max_episode_steps;
  return spec;
}

}  // namespace

CartPole::CartPole(int max_episode_steps, bool sutton_barto_reward)
    : ClassicControlEnv(cartpole_spec(max_episode_steps), 4),
      sutton_barto_reward_(sutton_barto_reward) {}

void CartPole::reset_physics(Pcg64& rng, float* obs) {
  x_ = rng.uniform(-0.05, 0.05);
  x_dot_ = rng.uniform(-0.05, 0.05);
  theta_ = rng.uniform(-0.05, 0.05);
  theta_dot_ = rng.uniform(-0.05, 0.05);
  observe(obs);
}

StepResult CartPole::step_physics(const ClassicAction& action, float* obs) {
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

void CartPole::observe(float* obs) const {
  obs[0] = static_cast<float>(x_);
  obs[1] = static_cast<float>(x_dot_);
  obs[2] = static_cast<float>(theta_);
  obs[3] = static_cast<float>(theta_dot_);
}

void CartPole::save_physics(double* out) const {
  out[0] = x_;
  out[1] = x_dot_;
  out[2] = theta_;
  out[3] = theta_dot_;
}

void CartPole::load_physics(const double* in) {
  x_ = in[0];
  x_dot_ = in[1];
  theta_ = in[2];
  theta_dot_ = in[3];
}

}  // namespace moonseed::envs
