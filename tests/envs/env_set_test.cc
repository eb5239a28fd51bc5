// EnvArray: the per-env EnvSet the actor loop steps (envs/env_set.h).
#include "envs/env_set.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <stdexcept>
#include <vector>

namespace moonseed::envs {
namespace {

constexpr size_t kObsBytes = 4 * sizeof(float);  // CartPole-v1

std::unique_ptr<EnvArray> cartpoles(int n) {
  std::vector<std::unique_ptr<Env>> envs;
  for (int i = 0; i < n; ++i) envs.push_back(make_env("CartPole-v1"));
  return std::make_unique<EnvArray>(std::move(envs));
}

// A CartPole whose step fails on chosen calls (an env that can fail must leave `obs` alone),
// and whose reset can be told to fail: the faults a plugin or a Python env reports.
class FailingEnv final : public Env {
 public:
  const EnvSpec& spec() const override { return inner_->spec(); }
  void reset(std::optional<uint64_t> seed, void* obs) override {
    if (fail_reset) throw std::runtime_error("no reset today");
    inner_->reset(seed, obs);
  }
  StepResult step(const void* action, void* obs) override {
    if (++steps == fail_at_step) throw std::runtime_error("the physics exploded");
    return inner_->step(action, obs);
  }
  std::vector<double> get_state() const override { return inner_->get_state(); }
  void set_state(const std::vector<double>& state) override { inner_->set_state(state); }

  int steps = 0;
  int fail_at_step = -1;
  bool fail_reset = false;

 private:
  std::unique_ptr<Env> inner_ = make_env("CartPole-v1");
};

struct Buffers {
  explicit Buffers(uint32_t n) : obs(n * kObsBytes, 0xAB), rewards(n, -7.f), flags(n, 0xFF), actions(n, 1) {}
  std::vector<uint8_t> obs;
  std::vector<float> rewards;
  std::vector<uint8_t> flags;
  std::vector<int32_t> actions;

  EnvSetCall call(uint32_t begin, const std::vector<EnvOp>& ops, const std::vector<uint64_t>* seeds = nullptr) {
    EnvSetCall c;
    c.begin = begin;
    c.count = static_cast<uint32_t>(ops.size());
    c.ops = ops.data();
    c.actions = reinterpret_cast<const uint8_t*>(actions.data());
    c.seeds = seeds ? seeds->data() : nullptr;
    c.observations = obs.data();
    c.rewards = rewards.data();
    c.flags = flags.data();
    return c;
  }
};

TEST(EnvArray, ResetsStepsAndSkipsAsEachEnvsOperationSays) {
  auto set = cartpoles(3);
  EXPECT_EQ(set->size(), 3u);
  EXPECT_EQ(set->spec().id, "CartPole-v1");
  Buffers b(3);
  std::vector<EnvError> errors;
  const std::vector<uint64_t> seeds = {11, 12, 13};
  const std::vector<EnvOp> resets(3, EnvOp::kReset);
  set->run(b.call(0, resets, &seeds), errors);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(b.flags[i], kFirst);
    EXPECT_EQ(b.rewards[i], 0.f);
    // Seeded like a lone env reset with the same seed.
    auto lone = make_env("CartPole-v1");
    std::vector<uint8_t> expected(kObsBytes);
    lone->reset(seeds[i], expected.data());
    EXPECT_EQ(0, std::memcmp(expected.data(), &b.obs[i * kObsBytes], kObsBytes)) << "env " << i;
  }

  const std::vector<uint8_t> before = b.obs;
  b.flags = {0xFF, 0xFF, 0xFF};
  b.rewards = {-7.f, -7.f, -7.f};
  set->run(b.call(0, {EnvOp::kStep, EnvOp::kSkip, EnvOp::kStep}), errors);
  EXPECT_TRUE(errors.empty());
  EXPECT_EQ(b.rewards[0], 1.f);
  EXPECT_EQ(b.flags[0], 0);
  EXPECT_NE(0, std::memcmp(before.data(), b.obs.data(), kObsBytes));
  // The skipped env and its outputs are untouched.
  EXPECT_EQ(b.rewards[1], -7.f);
  EXPECT_EQ(b.flags[1], 0xFF);
  EXPECT_EQ(0, std::memcmp(&before[kObsBytes], &b.obs[kObsBytes], kObsBytes));
  EXPECT_EQ(set->env(1).get_state(), [&] {
    auto lone = make_env("CartPole-v1");
    std::vector<uint8_t> o(kObsBytes);
    lone->reset(12, o.data());
    return lone->get_state();
  }());
}

TEST(EnvArray, ACallOnASubrangeWritesItsOwnRowsFromZero) {
  auto set = cartpoles(4);
  Buffers b(2);
  std::vector<EnvError> errors;
  const std::vector<uint64_t> seeds = {5, 6};
  set->run(b.call(2, {EnvOp::kReset, EnvOp::kReset}, &seeds), errors);
  auto lone = make_env("CartPole-v1");
  std::vector<uint8_t> expected(kObsBytes);
  lone->reset(6, expected.data());
  EXPECT_EQ(0, std::memcmp(expected.data(), &b.obs[kObsBytes], kObsBytes));
  EXPECT_THROW(set->run(b.call(3, {EnvOp::kReset, EnvOp::kReset}, &seeds), errors), std::out_of_range);
}

TEST(EnvArray, AFailedStepEndsOnlyThatEpisodeAndKeepsItsLastObservation) {
  std::vector<std::unique_ptr<Env>> envs;
  envs.push_back(make_env("CartPole-v1"));
  auto failing = std::make_unique<FailingEnv>();
  failing->fail_at_step = 2;
  FailingEnv* fault = failing.get();
  envs.push_back(std::move(failing));
  EnvArray set(std::move(envs));
  Buffers b(2);
  std::vector<EnvError> errors;
  const std::vector<uint64_t> seeds = {1, 2};
  set.run(b.call(0, {EnvOp::kReset, EnvOp::kReset}, &seeds), errors);
  set.run(b.call(0, {EnvOp::kStep, EnvOp::kStep}), errors);
  ASSERT_TRUE(errors.empty());
  const std::vector<uint8_t> last_good(b.obs.begin() + kObsBytes, b.obs.end());
  set.run(b.call(0, {EnvOp::kStep, EnvOp::kStep}), errors);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].env, 1u);
  EXPECT_EQ(errors[0].message, "the physics exploded");
  EXPECT_EQ(b.flags[1], kTruncated);
  EXPECT_EQ(b.rewards[1], 0.f);
  EXPECT_EQ(0, std::memcmp(last_good.data(), &b.obs[kObsBytes], kObsBytes));
  // The healthy env stepped on.
  EXPECT_EQ(b.flags[0], 0);
  EXPECT_EQ(b.rewards[0], 1.f);

  fault->fail_reset = true;
  try {
    set.run(b.call(1, {EnvOp::kReset}), errors);
    FAIL() << "a failed reset must throw";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "env 1: reset failed: no reset today");
  }
}

TEST(EnvArray, RefusesNoEnvsAndEnvsOfDifferentSpecs) {
  EXPECT_THROW(EnvArray({}), std::invalid_argument);
  std::vector<std::unique_ptr<Env>> mixed;
  mixed.push_back(make_env("CartPole-v1"));
  mixed.push_back(make_env("Acrobot-v1"));
  try {
    EnvArray set(std::move(mixed));
    FAIL() << "mixed specs must be refused";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("Acrobot-v1"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace moonseed::envs
