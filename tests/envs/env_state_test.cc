// Behaviour every built-in env shares: state round trips, episode bookkeeping, action checks.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstring>
#include <random>
#include <stdexcept>
#include <vector>

#include "envs/env.h"
#include "tests/envs/env_test_util.h"

namespace moonseed::envs {
namespace {

using testing::reset_env;
using testing::make_test_env;

// An observation as a record keeps it: its bytes, or for observations of more than 4 KiB
// (SyntheticAtari's frames) a 64-bit digest, so that long plays stay small. The digest is
// FNV-1a over 8-byte words: xor and an odd multiplier are both invertible, so frames that
// differ in one word always get different digests.
std::vector<uint8_t> kept(const std::vector<uint8_t>& bytes) {
  if (bytes.size() <= 4096) return bytes;
  uint64_t digest = 14695981039346656037ULL;
  for (size_t at = 0; at < bytes.size(); at += sizeof(uint64_t)) {
    uint64_t word = 0;
    std::memcpy(&word, bytes.data() + at, std::min(sizeof(word), bytes.size() - at));
    digest = (digest ^ word) * 1099511628211ULL;
  }
  std::vector<uint8_t> out(sizeof(digest));
  std::memcpy(out.data(), &digest, sizeof(digest));
  return out;
}

std::vector<uint8_t> observation_buffer(const Env& env) {
  return std::vector<uint8_t>(static_cast<size_t>(env.spec().observation.byte_size()));
}

// One step's full output, compared bit for bit.
struct Record {
  std::vector<uint8_t> obs;  // kept()
  float reward = 0;
  bool terminated = false, truncated = false, reset = false;

  bool operator==(const Record& o) const {
    return obs == o.obs && std::memcmp(&reward, &o.reward, sizeof(float)) == 0 &&
           terminated == o.terminated && truncated == o.truncated && reset == o.reset;
  }
};

// Steps `env` with actions drawn from `random` (continuous ones beyond the bounds too, to
// exercise clipping), resetting without a seed when an episode ends.
std::vector<Record> play(Env& env, std::mt19937& random, int steps) {
  const Space& action_space = env.spec().action;
  std::vector<uint8_t> obs = observation_buffer(env);
  std::vector<Record> records;
  for (int t = 0; t < steps; ++t) {
    Record record;
    StepResult result;
    if (action_space.kind == SpaceKind::kDiscrete) {
      const int32_t action = static_cast<int32_t>(random() % static_cast<uint32_t>(action_space.n));
      result = env.step(&action, obs.data());
    } else {
      // One value per element (a MuJoCo humanoid takes 21), each within 1.5 times its bounds.
      std::vector<float> action(static_cast<size_t>(action_space.numel()));
      for (size_t i = 0; i < action.size(); ++i) {
        std::uniform_real_distribution<float> value(1.5f * action_space.low[i], 1.5f * action_space.high[i]);
        action[i] = value(random);
      }
      result = env.step(action.data(), obs.data());
    }
    record.obs = kept(obs);
    record.reward = result.reward;
    record.terminated = result.terminated;
    record.truncated = result.truncated;
    records.push_back(record);
    if (result.terminated || result.truncated) {
      Record reset;
      reset.reset = true;
      env.reset(std::nullopt, obs.data());
      reset.obs = kept(obs);
      records.push_back(reset);
    }
  }
  return records;
}

class EveryEnv : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    const std::string why = testing::unavailable_because(GetParam());
    if (!why.empty()) GTEST_SKIP() << why;
  }
};

TEST_P(EveryEnv, ContinuesBitIdenticallyFromSetStateOfGetState) {
  auto original = make_test_env(GetParam());
  reset_env(*original, 2024);
  std::mt19937 random(99);
  play(*original, random, 300);
  const std::vector<double> snapshot = original->get_state();
  const std::mt19937 random_at_snapshot = random;
  const std::vector<Record> expected = play(*original, random, 1000);

  auto restored = make_test_env(GetParam());
  reset_env(*restored, 1);  // a different episode, fully overwritten by set_state
  restored->set_state(snapshot);
  std::mt19937 replay = random_at_snapshot;
  const std::vector<Record> actual = play(*restored, replay, 1000);

  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) ASSERT_TRUE(actual[i] == expected[i]) << "record " << i;
  EXPECT_EQ(restored->get_state(), original->get_state());
}

TEST_P(EveryEnv, SetStateRestoresTheGeneratorOfAFreshEnv) {
  auto seeded = make_test_env(GetParam());
  reset_env(*seeded, 5);
  auto fresh = make_test_env(GetParam());
  fresh->set_state(seeded->get_state());
  EXPECT_EQ(reset_env(*fresh, std::nullopt), reset_env(*seeded, std::nullopt));
}

TEST_P(EveryEnv, SetStateOfTheWrongSizeIsRejected) {
  auto env = make_test_env(GetParam());
  reset_env(*env, 0);
  std::vector<double> state = env->get_state();
  state.push_back(0);
  EXPECT_THROW(env->set_state(state), std::invalid_argument);
  state.resize(3);
  EXPECT_THROW(env->set_state(state), std::invalid_argument);
}

TEST_P(EveryEnv, SetStateWithAMalformedGeneratorWordIsRejected) {
  auto env = make_test_env(GetParam());
  reset_env(*env, 0);
  std::vector<double> state = env->get_state();
  state.back() = 0.5;
  EXPECT_THROW(env->set_state(state), std::invalid_argument);
  state.back() = 4294967296.0;
  EXPECT_THROW(env->set_state(state), std::invalid_argument);
}

// The time limit ends an episode at its step, so a state still running there cannot come from an
// env with that limit. One step: MinAtar Seaquest can end on its second (down, then up with no
// divers on board).
TEST_P(EveryEnv, SetStateOfAnEpisodeStillRunningAtTheTimeLimitIsRejected) {
  auto unlimited = make_test_env(GetParam(), {{"max_episode_steps", 0}});
  reset_env(*unlimited, 0);
  std::mt19937 random(3);
  ASSERT_EQ(play(*unlimited, random, 1).size(), 1u);  // no reset: still running after 1 step
  auto limited = make_test_env(GetParam(), {{"max_episode_steps", 1}});
  reset_env(*limited, 0);
  const std::vector<double> before = limited->get_state();
  EXPECT_THROW(limited->set_state(unlimited->get_state()), std::invalid_argument);
  EXPECT_EQ(limited->get_state(), before);
}

TEST_P(EveryEnv, StepBeforeResetIsACallerBug) {
  auto env = make_test_env(GetParam());
  std::vector<uint8_t> obs = observation_buffer(*env);
  const std::vector<float> action(64, 0.f);  // enough zeros for any box action
  EXPECT_THROW(env->step(action.data(), obs.data()), std::logic_error);
}

TEST_P(EveryEnv, StepAfterTheEpisodeEndedIsACallerBug) {
  auto env = make_test_env(GetParam(), {{"max_episode_steps", 1}});
  reset_env(*env, 0);
  std::vector<uint8_t> obs = observation_buffer(*env);
  const int32_t discrete = 0;
  const std::vector<float> box(64, 0.f);  // enough zeros for any box action
  const void* action = env->spec().action.kind == SpaceKind::kDiscrete
                           ? static_cast<const void*>(&discrete)
                           : static_cast<const void*>(box.data());
  EXPECT_TRUE(env->step(action, obs.data()).truncated);
  EXPECT_THROW(env->step(action, obs.data()), std::logic_error);
  reset_env(*env, std::nullopt);
  EXPECT_NO_THROW(env->step(action, obs.data()));
}

TEST_P(EveryEnv, ResetWithoutAnySeedStillWorks) {
  auto a = make_test_env(GetParam());
  auto b = make_test_env(GetParam());
  // Seeded from OS entropy, as Gymnasium does; two envs almost surely differ. Several resets
  // each, since an env with few initial observations (CueRecall's two cues) repeats one often.
  std::vector<std::vector<float>> from_a, from_b;
  for (int i = 0; i < 64; ++i) {
    from_a.push_back(reset_env(*a, std::nullopt));
    from_b.push_back(reset_env(*b, std::nullopt));
  }
  // Some games always start alike (MinAtar's Asterix, Seaquest and SpaceInvaders draw nothing
  // in reset); their generators, in the state, still differ.
  EXPECT_TRUE(from_a != from_b || a->get_state() != b->get_state());
}

TEST_P(EveryEnv, ZeroMaxEpisodeStepsMeansNoTimeLimit) {
  auto env = make_test_env(GetParam(), {{"max_episode_steps", 0}});
  EXPECT_EQ(env->spec().max_episode_steps, 0);
  reset_env(*env, 0);
  std::mt19937 random(4);
  for (const Record& record : play(*env, random, 3000)) ASSERT_FALSE(record.truncated);
}

TEST_P(EveryEnv, MaxEpisodeStepsOptionSetsTheTruncationStep) {
  auto env = make_test_env(GetParam(), {{"max_episode_steps", 3}});
  EXPECT_EQ(env->spec().max_episode_steps, 3);
  std::mt19937 random(8);
  for (int episode = 0; episode < 5; ++episode) {
    reset_env(*env, episode);
    std::vector<Record> records = play(*env, random, 3);
    // Either the env terminated first, or it is truncated exactly at step 3.
    if (!records[0].terminated && !records[1].terminated) {
      EXPECT_FALSE(records[0].truncated);
      EXPECT_FALSE(records[1].truncated);
      EXPECT_TRUE(records[2].truncated);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Builtin, EveryEnv, ::testing::ValuesIn(env_ids()),
                         [](const auto& info) {
                           std::string name;
                           for (char c : info.param) {
                             if (std::isalnum(static_cast<unsigned char>(c))) name += c;
                           }
                           return name;
                         });

TEST(DiscreteAction, OutOfRangeIndexIsRejectedWithItsValue) {
  auto env = make_env("CartPole-v1");
  reset_env(*env, 0);
  std::vector<float> obs(4);
  const int32_t action = 2;
  try {
    env->step(&action, obs.data());
    FAIL() << "expected invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("action 2"), std::string::npos) << e.what();
  }
  const int32_t negative = -1;
  EXPECT_THROW(env->step(&negative, obs.data()), std::invalid_argument);
}

}  // namespace
}  // namespace moonseed::envs
