// Env::render: the renderers' pixels, read back from the frame they draw.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <vector>

#include "envs/canvas.h"
#include "envs/classic/acrobot.h"
#include "envs/classic/cartpole.h"
#include "envs/classic/mountain_car.h"
#include "envs/classic/mountain_car_continuous.h"
#include "envs/classic/pendulum.h"
#include "envs/env.h"
#include "envs/minatar/minatar_env.h"
#include "tests/envs/env_test_util.h"

namespace moonseed::envs {
namespace {

using testing::set_physics;

Rgb pixel(const Image& frame, double x, double y) {
  const size_t at = (static_cast<size_t>(y) * static_cast<size_t>(frame.width) + static_cast<size_t>(x)) * 3;
  return {frame.rgb.at(at), frame.rgb.at(at + 1), frame.rgb.at(at + 2)};
}

constexpr Rgb kWhite = {255, 255, 255};
constexpr Rgb kWood = {202, 152, 101};

TEST(Canvas, PaintsPixelsWhoseCentresAreInside) {
  Image frame;
  Canvas canvas(frame, 8, 6, {1, 2, 3});
  EXPECT_EQ(frame.rgb.size(), 8u * 6u * 3u);
  canvas.fill_rect(2, 1, 4, 3, {9, 9, 9});
  for (int y = 0; y < 6; ++y) {
    for (int x = 0; x < 8; ++x) {
      const bool inside = x >= 2 && x < 4 && y >= 1 && y < 3;
      EXPECT_EQ(canvas.pixel(x, y), (inside ? Rgb{9, 9, 9} : Rgb{1, 2, 3})) << x << "," << y;
    }
  }
  canvas.fill_circle({100, 100}, 3, {7, 7, 7});  // outside: clipped away, nothing written
  canvas.fill_rect(-5, -5, 100, 100, {5, 5, 5});
  EXPECT_EQ(canvas.pixel(7, 5), (Rgb{5, 5, 5}));
}

// The pole's middle (0.5 m up the 1 m pole, 125 px a metre) is wood, and moves with theta.
TEST(Render, CartPolePoleFollowsTheta) {
  CartPole env;
  Image frame;
  const double axle_x = 300, axle_y = 400 - 100 - 7.5, half = 62.5;
  for (double theta : {0.0, 0.2, -0.2}) {
    set_physics(env, {0, 0, theta, 0});
    ASSERT_TRUE(env.render(frame));
    ASSERT_EQ(frame.width, 600);
    ASSERT_EQ(frame.height, 400);
    EXPECT_EQ(pixel(frame, axle_x + half * std::sin(theta), axle_y - half * std::cos(theta)), kWood) << theta;
    // Where the pole of the mirrored angle would be: background.
    if (theta != 0) {
      EXPECT_EQ(pixel(frame, axle_x - half * std::sin(theta), axle_y - half * std::cos(theta)), kWhite) << theta;
    }
  }
  // The cart moves with x: 1 m right is 125 px right.
  set_physics(env, {1.0, 0, 0, 0});
  ASSERT_TRUE(env.render(frame));
  EXPECT_EQ(pixel(frame, 300 + 125, 400 - 100 + 10), (Rgb{0, 0, 0}));
  EXPECT_EQ(pixel(frame, 300 - 40, 400 - 100 + 10), kWhite);
}

TEST(Render, OtherClassicEnvsDrawTheirState) {
  Image frame;
  Pendulum pendulum;
  set_physics(pendulum, {0, 0});  // upright: the rod above the pivot
  ASSERT_TRUE(pendulum.render(frame));
  EXPECT_EQ(frame.width, 500);
  EXPECT_NE(pixel(frame, 250, 250 - 60), kWhite);
  EXPECT_EQ(pixel(frame, 250, 250 + 60), kWhite);
  Acrobot acrobot;
  set_physics(acrobot, {0, 0, 0, 0});  // hanging straight down
  ASSERT_TRUE(acrobot.render(frame));
  EXPECT_NE(pixel(frame, 250, 250 + 150), kWhite);
  EXPECT_EQ(pixel(frame, 250, 250 - 150), kWhite);
  MountainCar car;
  ASSERT_TRUE(car.render(frame));
  EXPECT_EQ(frame.width, 600);
}

// Where the hill y = 0.45 sin(3 x) + 0.55 puts x on the 600 x 400 picture (x in [-1.2, 0.6]).
Point on_hill(double x) {
  const double scale = 600 / 1.8;
  return {(x + 1.2) * scale, 400 - 20 - (0.45 * std::sin(3 * x) + 0.55) * scale};
}

// MountainCarContinuous is drawn as MountainCar: the car (a black disc 12 px above the hill)
// follows the position, and the goal flag stands at its own goal, x = 0.45 (MountainCar's: 0.5).
TEST(Render, MountainCarContinuousDrawsTheCarAndItsGoalFlag) {
  constexpr Rgb kFlag = {204, 204, 0};
  MountainCarContinuous env;
  Image frame;
  for (double position : {-0.5, -1.0, 0.2}) {
    set_physics(env, {position, 0});
    ASSERT_TRUE(env.render(frame));
    ASSERT_EQ(frame.width, 600);
    ASSERT_EQ(frame.height, 400);
    const Point car = on_hill(position);
    EXPECT_EQ(pixel(frame, car.x, car.y - 12), (Rgb{0, 0, 0})) << position;
    const Point elsewhere = on_hill(position < 0 ? position + 0.4 : position - 0.4);
    EXPECT_EQ(pixel(frame, elsewhere.x, elsewhere.y - 12), kWhite) << position;
  }
  const Point goal = on_hill(0.45);
  EXPECT_EQ(pixel(frame, goal.x + 3, goal.y - 45), kFlag);
  MountainCar discrete;
  ASSERT_TRUE(discrete.render(frame));
  EXPECT_EQ(pixel(frame, goal.x + 3, goal.y - 45), kWhite);  // its flag is at 0.5
  const Point its_goal = on_hill(0.5);
  EXPECT_EQ(pixel(frame, its_goal.x + 3, its_goal.y - 45), kFlag);
}

// Every set cell has its channel's colour (the highest channel set there), every empty cell is black.
TEST(Render, MinAtarCellsHaveTheirChannelsColour) {
  const std::unique_ptr<Env> env = make_env("MinAtar/Breakout-v1");
  const EnvSpec& spec = env->spec();
  std::vector<uint8_t> obs(static_cast<size_t>(spec.observation.byte_size()));
  env->reset(7, obs.data());
  const int channels = static_cast<int>(spec.observation.shape[2]);
  Image frame;
  ASSERT_TRUE(env->render(frame));
  ASSERT_EQ(frame.width, 10 * minatar::kCellPixels);
  ASSERT_EQ(frame.height, 10 * minatar::kCellPixels);
  int painted = 0;
  for (int row = 0; row < 10; ++row) {
    for (int column = 0; column < 10; ++column) {
      Rgb expected = {0, 0, 0};
      for (int c = 0; c < channels; ++c) {
        if (obs[static_cast<size_t>((row * 10 + column) * channels + c)]) expected = minatar::channel_colour(c);
      }
      painted += expected != Rgb{0, 0, 0};
      const double x = (column + 0.5) * minatar::kCellPixels, y = (row + 0.5) * minatar::kCellPixels;
      EXPECT_EQ(pixel(frame, x, y), expected) << row << "," << column;
    }
  }
  EXPECT_GT(painted, 10);  // Breakout starts with three rows of bricks
}

TEST(Render, EnvsWithoutARendererSayNo) {
  const std::unique_ptr<Env> env = make_env("CueRecall-v0");
  Image frame;
  EXPECT_FALSE(env->render(frame));
  EXPECT_EQ(frame.width, 0);
}

}  // namespace
}  // namespace moonseed::envs
