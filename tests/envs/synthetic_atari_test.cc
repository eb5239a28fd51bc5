#include "envs/synthetic/synthetic_atari.h"

#include <gtest/gtest.h>
#include <lz4.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace moonseed::envs {
namespace {

using Frame = std::vector<uint8_t>;
using Rgb = std::array<uint8_t, 3>;

constexpr size_t kFrameBytes = 210 * 160 * 3;

// get_state() indices, as the header lays them out.
constexpr size_t kElapsed = 0, kLength = 1, kPhase = 2, kScore = 4, kPlayerX = 5, kPlayerY = 6,
                 kTargetX = 7, kTargetY = 8, kEnemy0 = 9, kTexture = 21;

// ALE action indices.
constexpr int32_t kNoop = 0, kUp = 2, kRight = 3, kLeft = 4, kDown = 5, kUpRight = 6, kUpLeft = 7,
                  kDownRight = 8, kDownLeft = 9, kLeftFire = 12, kDownFire = 13,
                  kDownRightFire = 16;

constexpr Rgb kPlayerColour = {252, 252, 84};
constexpr Rgb kEnemy0Colour = {200, 72, 72};
constexpr Rgb kScoreColour = {210, 164, 74};
constexpr Rgb kBlack = {0, 0, 0};

struct Step {
  Frame frame;
  StepResult result;
};

Frame reset_frame(Env& env, std::optional<uint64_t> seed, uint8_t poison = 0) {
  Frame frame(kFrameBytes, poison);
  env.reset(seed, frame.data());
  return frame;
}

Step step(Env& env, int32_t action, uint8_t poison = 0) {
  Step out{Frame(kFrameBytes, poison), {}};
  out.result = env.step(&action, out.frame.data());
  return out;
}

// The pixel at screen column x, row y.
Rgb pixel(const Frame& frame, int x, int y) {
  const size_t at = (static_cast<size_t>(y) * 160 + static_cast<size_t>(x)) * 3;
  return {frame[at], frame[at + 1], frame[at + 2]};
}

// Overwrites state values (index, value) through set_state.
void place(Env& env, std::initializer_list<std::pair<size_t, double>> values) {
  std::vector<double> state = env.get_state();
  for (const auto& [index, value] : values) state[index] = value;
  env.set_state(state);
}

int sign(double v) { return (v > 0) - (v < 0); }

// Moves the player's centre towards the target's centre: rewards come every few dozen steps.
int32_t chase(const Env& env) {
  static constexpr int32_t kToward[3][3] = {
      {kUpLeft, kUp, kUpRight}, {kLeft, kNoop, kRight}, {kDownLeft, kDown, kDownRight}};
  const std::vector<double> s = env.get_state();
  const int dx = sign((s[kTargetX] + 3) - (s[kPlayerX] + 4));
  const int dy = sign((s[kTargetY] + 3) - (s[kPlayerY] + 5));
  return kToward[dy + 1][dx + 1];
}

double lz4_ratio(const Frame& frame) {
  std::vector<char> out(static_cast<size_t>(LZ4_compressBound(static_cast<int>(frame.size()))));
  const int size = LZ4_compress_default(reinterpret_cast<const char*>(frame.data()), out.data(),
                                        static_cast<int>(frame.size()), static_cast<int>(out.size()));
  EXPECT_GT(size, 0);
  return static_cast<double>(frame.size()) / size;
}

std::string error_of(const EnvOptions& options) {
  try {
    make_env("SyntheticAtari-v0", options);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(SyntheticAtari, SpecIsAnAleRgbScreenWithTheFullActionSet) {
  const auto env = make_env("SyntheticAtari-v0");
  const EnvSpec& spec = env->spec();
  EXPECT_EQ(spec.id, "SyntheticAtari-v0");
  EXPECT_EQ(spec.observation.kind, SpaceKind::kBox);
  EXPECT_EQ(spec.observation.dtype, DType::kUInt8);
  EXPECT_EQ(spec.observation.shape, (std::vector<int64_t>{210, 160, 3}));
  EXPECT_EQ(spec.observation.byte_size(), 100800);
  EXPECT_EQ(spec.observation.low, std::vector<float>(kFrameBytes, 0.f));
  EXPECT_EQ(spec.observation.high, std::vector<float>(kFrameBytes, 255.f));
  EXPECT_EQ(spec.action.kind, SpaceKind::kDiscrete);
  EXPECT_EQ(spec.action.n, 18);
  EXPECT_EQ(spec.max_episode_steps, 0);
  EXPECT_EQ(dynamic_cast<const SyntheticAtari&>(*env).step_us(), 500);
  const auto options = make_env("SyntheticAtari-v0", {{"step_us", 0}, {"max_episode_steps", 700}});
  EXPECT_EQ(dynamic_cast<const SyntheticAtari&>(*options).step_us(), 0);
  EXPECT_EQ(options->spec().max_episode_steps, 700);
}

TEST(SyntheticAtari, SameSeedAndActionsGiveIdenticalFramesRewardsAndEnds) {
  SyntheticAtari a(0), b(0);
  ASSERT_EQ(reset_frame(a, 11), reset_frame(b, 11));
  std::mt19937 random(5);
  int rewards = 0, ends = 0;
  for (int t = 0; t < 2000; ++t) {
    // Mostly chasing the target (rewards), sometimes a random action of the 18.
    const int32_t action = random() % 4 == 0 ? static_cast<int32_t>(random() % 18) : chase(a);
    const Step sa = step(a, action);
    const Step sb = step(b, action);
    ASSERT_EQ(sa.frame, sb.frame) << "step " << t;
    ASSERT_EQ(sa.result.reward, sb.result.reward) << "step " << t;
    ASSERT_EQ(sa.result.terminated, sb.result.terminated) << "step " << t;
    ASSERT_EQ(sa.result.truncated, sb.result.truncated) << "step " << t;
    rewards += sa.result.reward > 0;
    if (sa.result.terminated) {
      ++ends;
      ASSERT_EQ(reset_frame(a, std::nullopt), reset_frame(b, std::nullopt)) << "step " << t;
    }
  }
  // The comparison covered reward steps and an episode end (episodes last at most 1500 steps).
  EXPECT_GT(rewards, 10);
  EXPECT_GE(ends, 1);
  EXPECT_EQ(a.get_state(), b.get_state());
}

TEST(SyntheticAtari, DifferentSeedsGiveDifferentFrames) {
  SyntheticAtari a(0), b(0);
  EXPECT_NE(reset_frame(a, 1), reset_frame(b, 2));
  for (int t = 0; t < 10; ++t) EXPECT_NE(step(a, kNoop).frame, step(b, kNoop).frame) << "step " << t;
  // The texture seed differs too, not only the sprites.
  EXPECT_NE(a.get_state()[kTexture], b.get_state()[kTexture]);
}

TEST(SyntheticAtari, EachActionMovesThePlayerAsAleNamesIt) {
  // (dx, dy) in pixels for the 18 actions: directions move 2 pixels per axis, with FIRE 4.
  const int expected[18][2] = {{0, 0},  {0, 0},  {0, -2}, {2, 0},  {-2, 0},  {0, 2},
                               {2, -2}, {-2, -2}, {2, 2}, {-2, 2}, {0, -4},  {4, 0},
                               {-4, 0}, {0, 4},  {4, -4}, {-4, -4}, {4, 4},  {-4, 4}};
  SyntheticAtari env(0);
  for (int32_t action = 0; action < 18; ++action) {
    reset_frame(env, 4);
    // Far from the target, so that no reward moves it.
    place(env, {{kPlayerX, 40}, {kPlayerY, 50}, {kTargetX, 140}, {kTargetY, 100}});
    const Step out = step(env, action);
    const int x = 40 + expected[action][0], y = 50 + expected[action][1];
    EXPECT_EQ(env.get_state()[kPlayerX], x) << "action " << action;
    EXPECT_EQ(env.get_state()[kPlayerY], y) << "action " << action;
    // The 8x10 player sprite is drawn there (playfield row 0 is screen row 62), and not beyond.
    EXPECT_EQ(pixel(out.frame, x, 62 + y), kPlayerColour) << "action " << action;
    EXPECT_EQ(pixel(out.frame, x + 7, 62 + y + 9), kPlayerColour) << "action " << action;
    EXPECT_NE(pixel(out.frame, x + 8, 62 + y), kPlayerColour) << "action " << action;
    EXPECT_NE(pixel(out.frame, x - 1, 62 + y), kPlayerColour) << "action " << action;
    EXPECT_NE(pixel(out.frame, x, 62 + y + 10), kPlayerColour) << "action " << action;
    EXPECT_NE(pixel(out.frame, x, 62 + y - 1), kPlayerColour) << "action " << action;
  }
}

TEST(SyntheticAtari, ThePlayerStaysInsideThePlayfield) {
  SyntheticAtari env(0);
  reset_frame(env, 4);
  place(env, {{kPlayerX, 0}, {kPlayerY, 0}, {kTargetX, 140}, {kTargetY, 100}});
  step(env, kUpLeft);
  EXPECT_EQ(env.get_state()[kPlayerX], 0);
  EXPECT_EQ(env.get_state()[kPlayerY], 0);
  place(env, {{kPlayerX, 1}, {kPlayerY, 101}});
  step(env, kLeftFire);
  step(env, kDownFire);
  EXPECT_EQ(env.get_state()[kPlayerX], 0);
  EXPECT_EQ(env.get_state()[kPlayerY], 102);  // 112 playfield rows - 10 player rows
  place(env, {{kPlayerX, 152}, {kPlayerY, 102}, {kTargetX, 0}, {kTargetY, 0}});
  step(env, kDownRightFire);
  EXPECT_EQ(env.get_state()[kPlayerX], 152);  // 160 columns - 8 player columns
  EXPECT_EQ(env.get_state()[kPlayerY], 102);
}

TEST(SyntheticAtari, TouchingTheTargetRewardsOneCountsInTheHudAndMovesTheTarget) {
  SyntheticAtari env(0);
  reset_frame(env, 3);
  // Player columns [20, 28), target columns [30, 36), same rows.
  place(env, {{kPlayerX, 20}, {kPlayerY, 30}, {kTargetX, 30}, {kTargetY, 30}});
  const Step near = step(env, kRight);  // player [22, 30): not yet touching
  EXPECT_EQ(near.result.reward, 0.f);
  EXPECT_EQ(env.get_state()[kTargetX], 30);
  // The score's last digit (columns 32-37, rows 4-13) shows 0, whose top row is full.
  EXPECT_EQ(pixel(near.frame, 32, 4), kScoreColour);
  const Step touch = step(env, kRight);  // player [24, 32) overlaps [30, 36)
  EXPECT_EQ(touch.result.reward, 1.f);
  EXPECT_FALSE(touch.result.terminated);
  const std::vector<double> state = env.get_state();
  EXPECT_EQ(state[kScore], 1);
  EXPECT_FALSE(state[kTargetX] == 30 && state[kTargetY] == 30);
  // Now a 1: its top row is 010 in the 3x5 font, drawn at twice the size.
  EXPECT_EQ(pixel(touch.frame, 32, 4), kBlack);
  EXPECT_EQ(pixel(touch.frame, 34, 4), kScoreColour);
  EXPECT_EQ(pixel(touch.frame, 36, 4), kBlack);
}

TEST(SyntheticAtari, EnemiesBounceOffTheEdgesWhateverTheAgentDoes) {
  SyntheticAtari env(0);
  reset_frame(env, 6);
  // Enemy 0: x phase 150 at 3 pixels per step bounces off x = 152 (period 304); y phase 0 at 1.
  // The other sprites are kept in the lower left, away from it.
  place(env, {{kEnemy0, 150}, {kEnemy0 + 1, 0}, {kEnemy0 + 2, 3}, {kEnemy0 + 3, 1},
              {kEnemy0 + 4, 0}, {kEnemy0 + 5, 90}, {kEnemy0 + 6, 1}, {kEnemy0 + 7, 1},
              {kEnemy0 + 8, 40}, {kEnemy0 + 9, 90}, {kEnemy0 + 10, 1}, {kEnemy0 + 11, 1},
              {kPlayerX, 0}, {kPlayerY, 90}, {kTargetX, 20}, {kTargetY, 100}});
  const Step first = step(env, kNoop);  // 150 + 3 = 153 -> x = 304 - 153 = 151, y = 1
  EXPECT_EQ(pixel(first.frame, 151, 62 + 1), kEnemy0Colour);
  EXPECT_EQ(pixel(first.frame, 158, 62 + 8), kEnemy0Colour);
  EXPECT_NE(pixel(first.frame, 150, 62 + 1), kEnemy0Colour);
  EXPECT_NE(pixel(first.frame, 151, 62 + 0), kEnemy0Colour);
  const Step second = step(env, kRight);  // 156 -> x = 148, y = 2
  EXPECT_EQ(pixel(second.frame, 148, 62 + 2), kEnemy0Colour);
  EXPECT_EQ(pixel(second.frame, 155, 62 + 9), kEnemy0Colour);
  EXPECT_NE(pixel(second.frame, 156, 62 + 2), kEnemy0Colour);
  EXPECT_NE(pixel(second.frame, 147, 62 + 2), kEnemy0Colour);
}

TEST(SyntheticAtari, EpisodesTerminateAfterTheirDrawnLength) {
  SyntheticAtari env(0);
  int shortest = 1500, longest = 500;
  for (uint64_t seed = 0; seed < 100; ++seed) {
    reset_frame(env, seed);
    // The first draw of reset(): 500 + floor(1001 * Generator.random()).
    Pcg64 rng(seed);
    const int length = 500 + static_cast<int>(1001 * rng.next_double());
    ASSERT_EQ(env.get_state()[kLength], length) << "seed " << seed;
    shortest = std::min(shortest, length);
    longest = std::max(longest, length);
  }
  EXPECT_LT(shortest, 600);
  EXPECT_GT(longest, 1400);

  reset_frame(env, 17);
  const int length = static_cast<int>(env.get_state()[kLength]);
  for (int t = 1; t < length; ++t) {
    const StepResult r = step(env, static_cast<int32_t>(t % 18)).result;
    ASSERT_FALSE(r.terminated || r.truncated) << "step " << t << " of " << length;
  }
  const StepResult last = step(env, kNoop).result;
  EXPECT_TRUE(last.terminated);
  EXPECT_FALSE(last.truncated);
  EXPECT_THROW(step(env, kNoop), std::logic_error);
  reset_frame(env, std::nullopt);
  EXPECT_NO_THROW(step(env, kNoop));
}

TEST(SyntheticAtari, MaxEpisodeStepsTruncatesBeforeTheDrawnLength) {
  SyntheticAtari env(0, /*max_episode_steps=*/10);
  reset_frame(env, 0);
  for (int t = 1; t < 10; ++t) ASSERT_FALSE(step(env, kUp).result.truncated) << "step " << t;
  const Step out = step(env, kUp);
  EXPECT_TRUE(out.result.truncated);
  EXPECT_FALSE(out.result.terminated);
  EXPECT_THROW(step(env, kNoop), std::logic_error);
}

TEST(SyntheticAtari, SetStateMidEpisodeContinuesIdentically) {
  SyntheticAtari original(0);
  reset_frame(original, 8);
  for (int t = 0; t < 300; ++t) step(original, chase(original));
  const std::vector<double> snapshot = original.get_state();
  SyntheticAtari restored(0);
  reset_frame(restored, 99);
  restored.set_state(snapshot);
  EXPECT_EQ(restored.get_state(), snapshot);
  int rewards = 0, ends = 0;
  for (int t = 0; t < 1500; ++t) {
    const int32_t action = chase(original);
    ASSERT_EQ(chase(restored), action);
    const Step a = step(original, action);
    const Step b = step(restored, action);
    ASSERT_EQ(b.frame, a.frame) << "step " << t;
    ASSERT_EQ(b.result.reward, a.result.reward) << "step " << t;
    ASSERT_EQ(b.result.terminated, a.result.terminated) << "step " << t;
    rewards += a.result.reward > 0;
    if (a.result.terminated) {
      ++ends;
      ASSERT_EQ(reset_frame(restored, std::nullopt), reset_frame(original, std::nullopt));
    }
  }
  EXPECT_GT(rewards, 10);
  EXPECT_GE(ends, 1);  // 300 + 1500 steps pass the longest episode
}

TEST(SyntheticAtari, SetStateRejectsValuesGetStateCannotProduce) {
  SyntheticAtari env(0, /*max_episode_steps=*/800);
  reset_frame(env, 0);
  place(env, {{kLength, 700}, {kElapsed, 20}, {kScore, 3}});
  const std::vector<double> good = env.get_state();
  const std::vector<std::pair<size_t, double>> bad = {
      {kLength, 499},          {kLength, 1501},       {kElapsed, 701},  {kElapsed, 700},  // ended
      {kPhase, 3},             {kScore, 21},          {kPlayerX, 153},  {kPlayerY, 103},
      {kTargetX, 155},         {kTargetY, 107},       {kEnemy0, 304},   {kEnemy0 + 1, 208},
      {kEnemy0 + 2, 0},        {kEnemy0 + 3, 4},      {kTexture, 4294967296.0},
      {kPlayerX, 1.5},         {kPlayerY, -1}};
  for (const auto& [index, value] : bad) {
    std::vector<double> state = good;
    state[index] = value;
    EXPECT_THROW(env.set_state(state), std::invalid_argument) << index << " = " << value;
    EXPECT_EQ(env.get_state(), good) << index << " = " << value;
  }
  std::vector<double> ended = good;
  ended[kElapsed] = 700;
  ended[kPhase] = 2;
  EXPECT_NO_THROW(env.set_state(ended));
  std::vector<double> truncated = good;  // running at max_episode_steps = 800 is impossible too
  truncated[kLength] = 900;
  truncated[kElapsed] = 800;
  EXPECT_THROW(env.set_state(truncated), std::invalid_argument);
  truncated[kElapsed] = 799;
  EXPECT_NO_THROW(env.set_state(truncated));
  EXPECT_THROW(env.set_state(std::vector<double>(good.begin(), good.end() - 1)),
               std::invalid_argument);
}

TEST(SyntheticAtari, OptionsOutOfRangeAreRejectedNamingTheOptionAndValue) {
  std::string error = error_of({{"step_us", -1}});
  EXPECT_TRUE(contains(error, "step_us must be in [0, 100000], got -1")) << error;
  error = error_of({{"step_us", 100001}});
  EXPECT_TRUE(contains(error, "step_us") && contains(error, "100001")) << error;
  error = error_of({{"step_us", 2.5}});
  EXPECT_TRUE(contains(error, "step_us must be an integer") && contains(error, "2.5")) << error;
  error = error_of({{"max_episode_steps", -3}});
  EXPECT_TRUE(contains(error, "max_episode_steps") && contains(error, "-3")) << error;
  error = error_of({{"step_ms", 1}});
  EXPECT_TRUE(contains(error, "unknown option \"step_ms\"") &&
              contains(error, "max_episode_steps, step_us"))
      << error;
  EXPECT_NO_THROW(make_env("SyntheticAtari-v0", {{"step_us", 0}}));
  EXPECT_NO_THROW(make_env("SyntheticAtari-v0", {{"step_us", 100000}}));
  EXPECT_THROW(SyntheticAtari(-1), std::invalid_argument);
  EXPECT_THROW(SyntheticAtari(0, -1), std::invalid_argument);
}

TEST(SyntheticAtari, OutOfRangeActionIsRejectedWithItsValue) {
  SyntheticAtari env(0);
  reset_frame(env, 0);
  try {
    step(env, 18);
    FAIL() << "expected invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_TRUE(contains(e.what(), "action 18")) << e.what();
  }
  EXPECT_THROW(step(env, -1), std::invalid_argument);
}

// Real Atari frames compress about 3 to 5 times with lz4; a frame of flat colours would
// compress some 50 times and make a recording bench meaningless.
TEST(SyntheticAtari, FramesCompressWithLz4AboutAsAtariFramesDo) {
  SyntheticAtari env(0);
  const Frame first = reset_frame(env, 2024);
  EXPECT_GE(lz4_ratio(first), 2.5);
  EXPECT_LE(lz4_ratio(first), 8.0);
  for (int t = 1; t <= 500; ++t) {
    const Step out = step(env, chase(env));
    if (t % 25 != 0) continue;
    const double ratio = lz4_ratio(out.frame);
    EXPECT_GE(ratio, 2.5) << "step " << t;
    EXPECT_LE(ratio, 8.0) << "step " << t;
  }
}

// Two envs in the same state write into buffers poisoned with complementary bytes: any byte a
// frame leaves unwritten differs between them.
TEST(SyntheticAtari, EveryResetAndStepWritesTheWholeFrame) {
  SyntheticAtari a(0), b(0);
  ASSERT_EQ(reset_frame(a, 31, 0xA5), reset_frame(b, 31, 0x5A));
  for (int t = 0; t < 60; ++t) {
    const int32_t action = chase(a);
    const Step sa = step(a, action, 0xA5);
    const Step sb = step(b, action, 0x5A);
    ASSERT_EQ(sa.frame, sb.frame) << "step " << t;
  }
}

TEST(SyntheticAtari, StepCostChangesNoOutput) {
  SyntheticAtari cheap(0), costly(200);
  ASSERT_EQ(reset_frame(cheap, 12), reset_frame(costly, 12));
  for (int32_t t = 0; t < 20; ++t) {
    const Step a = step(cheap, t % 18);
    const Step b = step(costly, t % 18);
    ASSERT_EQ(a.frame, b.frame) << "step " << t;
    ASSERT_EQ(a.result.reward, b.result.reward) << "step " << t;
  }
  EXPECT_EQ(cheap.get_state(), costly.get_state());
}

}  // namespace
}  // namespace moonseed::envs
