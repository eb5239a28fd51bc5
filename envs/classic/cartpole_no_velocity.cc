#include "envs/classic/cartpole_no_velocity.h"

#include <cstring>
#include <stdexcept>
#include <string>

namespace moonseed::envs {
namespace {

// The observed elements of CartPole's [x, x_dot, theta, theta_dot].
constexpr int kObserved[2] = {0, 2};

EnvSpec no_velocity_spec(const EnvSpec& full) {
  EnvSpec spec = full;
  spec.id = CartPoleNoVelocity::kId;
  spec.observation =
      float32_box({full.observation.low[kObserved[0]], full.observation.low[kObserved[1]]},
                  {full.observation.high[kObserved[0]], full.observation.high[kObserved[1]]});
  return spec;
}

// Runs `call` on the wrapped CartPole; its errors name CartPole-v1, so they are rethrown
// with this env's id in front (same exception type).
template <typename Call>
auto as_no_velocity(Call&& call) -> decltype(call()) {
  const std::string prefix = std::string(CartPoleNoVelocity::kId) + ": ";
  try {
    return call();
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(prefix + e.what());
  } catch (const std::logic_error& e) {
    throw std::logic_error(prefix + e.what());
  }
}

}  // namespace

CartPoleNoVelocity::CartPoleNoVelocity(int max_episode_steps, bool sutton_barto_reward)
    : cartpole_(max_episode_steps, sutton_barto_reward),
      spec_(no_velocity_spec(cartpole_.spec())) {}

void CartPoleNoVelocity::reset(std::optional<uint64_t> seed, void* obs) {
  std::array<float, 4> full{};
  as_no_velocity([&] { cartpole_.reset(seed, full.data()); });
  observe(full, obs);
}

StepResult CartPoleNoVelocity::step(const void* action, void* obs) {
  std::array<float, 4> full{};
  const StepResult result = as_no_velocity([&] { return cartpole_.step(action, full.data()); });
  observe(full, obs);
  return result;
}

std::vector<double> CartPoleNoVelocity::get_state() const { return cartpole_.get_state(); }

void CartPoleNoVelocity::set_state(const std::vector<double>& state) {
  as_no_velocity([&] { cartpole_.set_state(state); });
}

void CartPoleNoVelocity::observe(const std::array<float, 4>& full, void* obs) {
  const float observed[2] = {full[kObserved[0]], full[kObserved[1]]};
  std::memcpy(obs, observed, sizeof(observed));
}

}  // namespace moonseed::envs
