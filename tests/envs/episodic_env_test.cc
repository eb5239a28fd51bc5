// EpisodicEnv's contract as a derived env sees it, through a small env written for the test.
#include "envs/episodic_env.h"

#include <gtest/gtest.h>

#include <cstring>
#include <stdexcept>
#include <utility>
#include <vector>

namespace moonseed::envs {
namespace {

// Observes [elapsed_steps(), a draw]; terminates after kLength steps; its own state is one
// value, `mark`, which load_state rejects when negative.
class Probe final : public EpisodicEnv {
 public:
  static constexpr int kLength = 3;

  explicit Probe(int max_episode_steps = 0, Space action = discrete_space(2),
                 StateLayout layout = own_then_bookkeeping(1))
      : EpisodicEnv({"Probe-v0", float32_box({0.f, 0.f}, {9.f, 1.f}), std::move(action), max_episode_steps},
                    layout) {}

  double mark = 0;

 private:
  void start_episode(void* obs) override {
    write_floats(obs, {static_cast<float>(elapsed_steps()), static_cast<float>(rng().next_double())});
  }
  StepResult advance(const Action& /*action*/, void* obs) override {
    write_floats(obs, {static_cast<float>(elapsed_steps()), 0.f});
    StepResult result;
    result.terminated = elapsed_steps() == kLength;
    return result;
  }
  void save_state(double* state) const override { state[0] = mark; }
  void load_state(const double* state, const Episode& episode) override {
    if (state[0] < 0) throw std::invalid_argument("Probe-v0 set_state: negative mark");
    require_reachable(episode, kLength);
    mark = state[0];
  }
};

// Observations land at any byte offset: the base and write_floats assume no alignment.
std::vector<float> observe_at_offset(Probe& env, bool reset, int32_t action = 0) {
  std::vector<unsigned char> bytes(2 * sizeof(float) + 1);
  if (reset) {
    env.reset(7, bytes.data() + 1);
  } else {
    env.step(&action, bytes.data() + 1);
  }
  std::vector<float> obs(2);
  std::memcpy(obs.data(), bytes.data() + 1, 2 * sizeof(float));
  return obs;
}

TEST(EpisodicEnv, ElapsedStepsIsZeroAtResetAndCountsTheStepBeingTaken) {
  Probe env;
  EXPECT_EQ(observe_at_offset(env, true)[0], 0.f);
  EXPECT_EQ(observe_at_offset(env, false)[0], 1.f);
  EXPECT_EQ(observe_at_offset(env, false)[0], 2.f);
}

TEST(EpisodicEnv, StateIsTheEnvsValuesThenTheBookkeeping) {
  Probe env;
  env.mark = 4.5;
  observe_at_offset(env, true);
  observe_at_offset(env, false);
  const std::vector<double> state = env.get_state();
  ASSERT_EQ(state.size(), 1u + 3u + 8u);
  EXPECT_EQ(state[0], 4.5);  // the env's
  EXPECT_EQ(state[1], 1);    // elapsed steps
  EXPECT_EQ(state[2], 1);    // phase: running
  EXPECT_EQ(state[3], 1);    // generator seeded
}

TEST(EpisodicEnv, SetStateRejectedByTheEnvChangesNothing) {
  Probe env;
  observe_at_offset(env, true);
  const std::vector<double> good = env.get_state();
  std::vector<double> bad = good;
  bad[0] = -1;  // the env's own check
  bad[1] = 2;   // a valid elapsed count the base would take
  EXPECT_THROW(env.set_state(bad), std::invalid_argument);
  EXPECT_EQ(env.get_state(), good);
  bad = good;
  bad[1] = Probe::kLength;  // running after the episode's last step
  EXPECT_THROW(env.set_state(bad), std::invalid_argument);
  bad[2] = 2;  // over after it: fine
  EXPECT_NO_THROW(env.set_state(bad));
}

TEST(EpisodicEnv, ConstructorRejectsWhatTheBaseCannotServe) {
  EXPECT_THROW(Probe(-1), std::invalid_argument);
  const size_t too_many = EpisodicEnv::kMaxActionValues + 1;
  EXPECT_THROW(Probe(0, float32_box(std::vector<float>(too_many, -1.f), std::vector<float>(too_many, 1.f))),
               std::logic_error);
  EXPECT_THROW(Probe(0, discrete_space(2), {12, 1, 1, 3}), std::logic_error);  // two values in slot 1
  EXPECT_THROW(Probe(0, discrete_space(2), {12, 1, 2, 4}), std::logic_error);  // slot 4 is the generator's
}

}  // namespace
}  // namespace moonseed::envs
