#include "envs/memory/cue_recall.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "tests/envs/env_test_util.h"

namespace moonseed::envs {
namespace {

using testing::Outcome;
using testing::reset_env;
using testing::step_discrete;

// Observations of CueRecall with `cues` = 3 (layout [cue one-hot x3, cue, wait, query]).
const std::vector<float> kWait3 = {0, 0, 0, 0, 1, 0};
const std::vector<float> kQuery3 = {0, 0, 0, 0, 0, 1};
const std::vector<float> kAfterEnd3 = {0, 0, 0, 0, 0, 0};

std::string error_of(const EnvOptions& options) {
  try {
    make_env("CueRecall-v0", options);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Starts an episode (seed 0) whose cue is `cue`, set through the state layout the header
// documents ([cue, elapsed steps, phase, ...]).
void reset_with_cue(CueRecall& env, int cue) {
  reset_env(env, 0);
  std::vector<double> state = env.get_state();
  state[0] = cue;
  env.set_state(state);
}

// The cue shown by a cue observation (one-hot in [0, K)).
int cue_of(const std::vector<float>& obs, int cues) {
  int cue = -1;
  for (int i = 0; i < cues; ++i) {
    if (obs[static_cast<size_t>(i)] == 1.f) cue = i;
  }
  return cue;
}

TEST(CueRecall, SpecHasAOneHotCueAndThreePhaseFlags) {
  CueRecall env(/*delay=*/4, /*cues=*/3);
  const EnvSpec& spec = env.spec();
  EXPECT_EQ(spec.id, "CueRecall-v0");
  EXPECT_EQ(spec.max_episode_steps, 0);
  EXPECT_EQ(spec.action.kind, SpaceKind::kDiscrete);
  EXPECT_EQ(spec.action.n, 3);
  EXPECT_EQ(spec.observation.kind, SpaceKind::kBox);
  EXPECT_EQ(spec.observation.dtype, DType::kFloat32);
  EXPECT_EQ(spec.observation.shape, std::vector<int64_t>{6});
  EXPECT_EQ(spec.observation.low, std::vector<float>(6, 0.f));
  EXPECT_EQ(spec.observation.high, std::vector<float>(6, 1.f));
  const auto made = make_env("CueRecall-v0");
  EXPECT_EQ(made->spec().action.n, 2);
  EXPECT_EQ(made->spec().observation.shape, std::vector<int64_t>{5});
}

TEST(CueRecall, ResetShowsTheDrawnCueOneHotWithTheCueFlag) {
  CueRecall env(/*delay=*/2, /*cues=*/3);
  std::vector<bool> shown(3, false);
  for (uint64_t seed = 0; seed < 30; ++seed) {
    const std::vector<float> obs = reset_env(env, seed);
    const int cue = cue_of(obs, 3);
    ASSERT_GE(cue, 0) << "seed " << seed;
    std::vector<float> expected = {0, 0, 0, 1, 0, 0};
    expected[static_cast<size_t>(cue)] = 1;
    EXPECT_EQ(obs, expected) << "seed " << seed;
    EXPECT_EQ(env.get_state()[0], cue) << "seed " << seed;
    shown[static_cast<size_t>(cue)] = true;
  }
  EXPECT_EQ(shown, std::vector<bool>(3, true));
}

TEST(CueRecall, AfterTheCueComeDelayThenQueryThenAnAllZeroObservation) {
  CueRecall env(/*delay=*/2, /*cues=*/3);
  for (int cue = 0; cue < 3; ++cue) {
    reset_with_cue(env, cue);
    EXPECT_EQ(step_discrete(env, 0).obs, kWait3);
    EXPECT_EQ(step_discrete(env, 1).obs, kWait3);
    EXPECT_EQ(step_discrete(env, 2).obs, kQuery3);
    const Outcome answer = step_discrete(env, cue);
    EXPECT_EQ(answer.obs, kAfterEnd3);
    EXPECT_TRUE(answer.result.terminated);
  }
}

// Whatever the cue and whatever the agent does before the query, the observations and rewards
// after the first are the same: the delay carries no information about the cue.
TEST(CueRecall, DelayAndQueryObservationsAreTheSameForEveryCue) {
  const int delay = 6, cues = 4;
  std::vector<std::vector<float>> reference;
  for (int cue = 0; cue < cues; ++cue) {
    for (int32_t filler = 0; filler < cues; ++filler) {
      CueRecall env(delay, cues);
      reset_with_cue(env, cue);
      std::vector<std::vector<float>> seen;
      for (int t = 1; t <= delay + 1; ++t) {
        const Outcome out = step_discrete(env, (filler + t) % cues);
        ASSERT_EQ(out.result.reward, 0.f);
        ASSERT_FALSE(out.result.terminated);
        ASSERT_FALSE(out.result.truncated);
        seen.push_back(out.obs);
      }
      if (reference.empty()) reference = seen;
      EXPECT_EQ(seen, reference) << "cue " << cue << " filler " << filler;
    }
  }
}

TEST(CueRecall, QueryRewardsPlusOneForTheCueAndMinusOneOtherwise) {
  const int delay = 3, cues = 3;
  for (int cue = 0; cue < cues; ++cue) {
    for (int32_t answer = 0; answer < cues; ++answer) {
      CueRecall env(delay, cues);
      reset_with_cue(env, cue);
      for (int t = 1; t <= delay + 1; ++t) step_discrete(env, cue);
      const Outcome out = step_discrete(env, answer);
      EXPECT_EQ(out.result.reward, answer == cue ? 1.f : -1.f) << cue << " " << answer;
      EXPECT_TRUE(out.result.terminated);
      EXPECT_FALSE(out.result.truncated);
    }
  }
}

TEST(CueRecall, TerminatesAfterDelayPlusTwoStepsAndNotBefore) {
  for (int delay : {0, 1, 5, 37}) {
    CueRecall env(delay, 2);
    reset_env(env, static_cast<uint64_t>(delay));
    for (int t = 1; t <= delay + 2; ++t) {
      const Outcome out = step_discrete(env, 0);
      ASSERT_EQ(out.result.terminated, t == delay + 2) << "delay " << delay << " step " << t;
      ASSERT_FALSE(out.result.truncated);
    }
    std::vector<float> obs(4);
    const int32_t action = 0;
    EXPECT_THROW(env.step(&action, obs.data()), std::logic_error) << "delay " << delay;
  }
}

TEST(CueRecall, ZeroDelayQueriesRightAfterTheCue) {
  CueRecall env(/*delay=*/0, /*cues=*/2);
  reset_with_cue(env, 1);
  const Outcome query = step_discrete(env, 0);
  EXPECT_EQ(query.obs, (std::vector<float>{0, 0, 0, 0, 1}));
  EXPECT_EQ(query.result.reward, 0.f);
  EXPECT_FALSE(query.result.terminated);
  const Outcome answer = step_discrete(env, 1);
  EXPECT_EQ(answer.obs, (std::vector<float>{0, 0, 0, 0, 0}));
  EXPECT_EQ(answer.result.reward, 1.f);
  EXPECT_TRUE(answer.result.terminated);
  EXPECT_NO_THROW(make_env("CueRecall-v0", {{"delay", 0}}));
}

TEST(CueRecall, OptionsSetDelayAndCues) {
  const auto env = make_env("CueRecall-v0", {{"delay", 1000}, {"cues", 16}});
  EXPECT_EQ(env->spec().action.n, 16);
  EXPECT_EQ(env->spec().observation.numel(), 19);
  reset_env(*env, 0);
  int steps = 0;
  for (bool over = false; !over; ++steps) over = step_discrete(*env, 0).result.terminated;
  EXPECT_EQ(steps, 1002);
}

TEST(CueRecall, OptionsOutOfRangeAreRejectedNamingTheOptionAndValue) {
  std::string error = error_of({{"delay", -1}});
  EXPECT_TRUE(contains(error, "delay") && contains(error, "-1")) << error;
  error = error_of({{"delay", 1001}});
  EXPECT_TRUE(contains(error, "delay") && contains(error, "1001")) << error;
  error = error_of({{"delay", 2.5}});
  EXPECT_TRUE(contains(error, "delay must be an integer") && contains(error, "2.5")) << error;
  error = error_of({{"cues", 1}});
  EXPECT_TRUE(contains(error, "cues must be in [2, 16], got 1")) << error;
  error = error_of({{"cues", 17}});
  EXPECT_TRUE(contains(error, "cues") && contains(error, "17")) << error;
  error = error_of({{"cue", 3}});
  EXPECT_TRUE(contains(error, "unknown option \"cue\"") &&
              contains(error, "cues, delay, max_episode_steps"))
      << error;
  EXPECT_THROW(CueRecall(-1, 2), std::invalid_argument);
  EXPECT_THROW(CueRecall(5, 1), std::invalid_argument);
  EXPECT_THROW(CueRecall(5, 2, -3), std::invalid_argument);
}

TEST(CueRecall, MaxEpisodeStepsTruncatesDuringTheDelay) {
  CueRecall env(/*delay=*/5, /*cues=*/3, /*max_episode_steps=*/3);
  reset_env(env, 0);
  EXPECT_FALSE(step_discrete(env, 0).result.truncated);
  EXPECT_FALSE(step_discrete(env, 0).result.truncated);
  const Outcome out = step_discrete(env, 0);
  EXPECT_TRUE(out.result.truncated);
  EXPECT_FALSE(out.result.terminated);
  EXPECT_EQ(out.obs, kWait3);  // the state it was cut in, for bootstrapping
}

TEST(CueRecall, OutOfRangeActionIsRejectedWithItsValue) {
  CueRecall env(2, 3);
  reset_env(env, 0);
  std::vector<float> obs(6);
  const int32_t action = 3;
  try {
    env.step(&action, obs.data());
    FAIL() << "expected invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_TRUE(contains(e.what(), "action 3")) << e.what();
  }
  const int32_t negative = -1;
  EXPECT_THROW(env.step(&negative, obs.data()), std::invalid_argument);
}

// The cues of `episodes` episodes: a seeded reset, then resets without a seed.
std::vector<int> cue_sequence(CueRecall& env, uint64_t seed, int episodes) {
  std::vector<int> cues;
  for (int e = 0; e < episodes; ++e) {
    const std::vector<float> obs =
        reset_env(env, e == 0 ? std::optional<uint64_t>(seed) : std::nullopt);
    cues.push_back(cue_of(obs, env.cues()));
  }
  return cues;
}

TEST(CueRecall, SameSeedGivesTheSameCues) {
  CueRecall a(3, 4), b(3, 4);
  const std::vector<int> cues = cue_sequence(a, 9, 40);
  EXPECT_EQ(cue_sequence(b, 9, 40), cues);
  EXPECT_NE(cue_sequence(b, 10, 40), cues);
  // Reseeding mid-stream starts the same sequence again.
  EXPECT_EQ(cue_sequence(a, 9, 40), cues);
}

TEST(CueRecall, SetStateMidEpisodeContinuesIdentically) {
  CueRecall original(4, 3);
  reset_env(original, 21);
  step_discrete(original, 0);
  step_discrete(original, 2);  // two steps into the delay
  const std::vector<double> snapshot = original.get_state();
  CueRecall restored(4, 3);
  reset_env(restored, 5);
  restored.set_state(snapshot);
  EXPECT_EQ(restored.get_state(), snapshot);
  // The rest of this episode (answered with action 1) and the next episodes' cues.
  for (int t = 3; t <= 6; ++t) {
    const Outcome a = step_discrete(original, 1);
    const Outcome b = step_discrete(restored, 1);
    EXPECT_EQ(b.obs, a.obs) << "step " << t;
    EXPECT_EQ(b.result.reward, a.result.reward) << "step " << t;
    EXPECT_EQ(b.result.terminated, a.result.terminated) << "step " << t;
  }
  for (int e = 0; e < 20; ++e) {
    EXPECT_EQ(reset_env(restored, std::nullopt), reset_env(original, std::nullopt));
  }
}

TEST(CueRecall, SetStateRejectsValuesGetStateCannotProduce) {
  CueRecall env(4, 3);
  reset_env(env, 0);
  const std::vector<double> good = env.get_state();
  std::vector<double> state = good;
  state[0] = 3;  // cue outside [0, 3)
  EXPECT_THROW(env.set_state(state), std::invalid_argument);
  state = good;
  state[1] = 7;  // more than delay + 2 steps
  EXPECT_THROW(env.set_state(state), std::invalid_argument);
  state = good;
  state[1] = 6;  // the episode has ended after delay + 2 steps, so it cannot be running
  EXPECT_THROW(env.set_state(state), std::invalid_argument);
  state[2] = 2;
  EXPECT_NO_THROW(env.set_state(state));
  EXPECT_THROW(env.set_state(std::vector<double>(good.begin(), good.end() - 1)),
               std::invalid_argument);
}

// Fixed seeds; expected count 1000 per cue with standard deviation about 26, so the bounds
// are some 6 standard deviations wide.
TEST(CueRecall, EachCueAppearsWithFrequencyAboutOneOverK) {
  for (int cues : {2, 3, 16}) {
    CueRecall env(0, cues);
    const int episodes = 1000 * cues;
    std::vector<int> count(static_cast<size_t>(cues), 0);
    for (int cue : cue_sequence(env, 2026, episodes)) {
      ASSERT_GE(cue, 0);
      ++count[static_cast<size_t>(cue)];
    }
    for (int c = 0; c < cues; ++c) {
      EXPECT_GT(count[static_cast<size_t>(c)], 850) << "cues " << cues << " cue " << c;
      EXPECT_LT(count[static_cast<size_t>(c)], 1150) << "cues " << cues << " cue " << c;
    }
  }
}

}  // namespace
}  // namespace moonseed::envs
