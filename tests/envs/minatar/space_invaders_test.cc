// SpaceInvaders' rules on hand-written states (layout in envs/minatar/space_invaders.h); the
// replay test checks the whole game against the package.
#include "envs/minatar/space_invaders.h"

#include <gtest/gtest.h>

#include <utility>
#include <vector>

#include "tests/envs/minatar/game_test_util.h"

namespace moonseed::envs {
namespace {

using namespace testing;
using minatar::SpaceInvaders;
// The tests play -v0, whose action indices are the FullActions (minatar::kNoop, ...).

using Cells = std::vector<std::pair<int, int>>;  // (row, column)

// The cannon at column 5, aliens moving left, no alien move or shot due in the next step.
struct State {
  int pos = 5, direction = -1, move_interval = 12, move_timer = 5, shot_timer = 5, ramp_index = 0,
      cooldown = 0;
  Cells aliens, bullets, alien_bullets;

  std::vector<double> values() const {
    std::vector<double> v = {
        double(pos),        double(direction),  double(move_interval), double(move_timer),
        double(shot_timer), double(ramp_index), double(cooldown),      0.0};
    for (const Cells* grid : {&aliens, &bullets, &alien_bullets}) {
      std::vector<double> map(100, 0.0);
      for (const auto& [row, col] : *grid) map[static_cast<size_t>(row * 10 + col)] = 1;
      v.insert(v.end(), map.begin(), map.end());
    }
    return v;
  }
};

TEST(MinAtarSpaceInvaders, ShootingTheLastAlienScoresAndBringsAFasterWave) {
  for (const bool ramping : {true, false}) {
    auto env = minatar_env("MinAtar/SpaceInvaders-v0", ramping);
    State s;
    s.aliens = {{3, 5}};
    s.bullets = {{4, 5}};  // moves up into the alien
    set_game_state(*env, s.values());
    const Frame frame = step_frame(*env, minatar::kNoop);
    EXPECT_EQ(frame.result.reward, 1.f);
    EXPECT_EQ(frame.count(SpaceInvaders::kBullet), 0);
    EXPECT_EQ(frame.count(SpaceInvaders::kAlien), 24);  // the new wave: rows 0-3, columns 2-7
    EXPECT_TRUE(frame.on(0, 2, SpaceInvaders::kAlienLeft) &&
                frame.on(3, 7, SpaceInvaders::kAlienLeft));
    EXPECT_EQ(game_state(*env)[2], ramping ? 11 : 12) << "move interval";
  }
}

TEST(MinAtarSpaceInvaders, FireLeavesABulletAboveTheCannonThenCoolsDown) {
  auto env = minatar_env("MinAtar/SpaceInvaders-v0");
  State s;
  s.aliens = {{0, 0}};
  set_game_state(*env, s.values());
  Frame frame = step_frame(*env, minatar::kFire);
  EXPECT_TRUE(frame.on(8, 5, SpaceInvaders::kBullet));
  EXPECT_EQ(game_state(*env)[6], 4) << "cooldown";
  frame = step_frame(*env, minatar::kFire);  // still cooling down: no second bullet
  EXPECT_TRUE(frame.on(7, 5, SpaceInvaders::kBullet));
  EXPECT_EQ(frame.count(SpaceInvaders::kBullet), 1);
}

// Columns are searched by distance from the cannon, the lower column first among equals; the
// shooter is the lowest alien of the column, and its bullet starts in its own cell.
TEST(MinAtarSpaceInvaders, TheNearestAlienShootsTiesGoToTheLowerColumn) {
  auto env = minatar_env("MinAtar/SpaceInvaders-v0");
  State s;
  s.shot_timer = 0;
  s.aliens = {{1, 4}, {2, 4}, {3, 6}};
  set_game_state(*env, s.values());
  const Frame frame = step_frame(*env, minatar::kNoop);
  EXPECT_TRUE(frame.on(2, 4, SpaceInvaders::kAlienBullet));
  EXPECT_EQ(frame.count(SpaceInvaders::kAlienBullet), 1);
}

// The package moves the block down with np.roll: an alien in the bottom row comes back at the
// top, turned, in the final observation of the episode the move ends.
TEST(MinAtarSpaceInvaders, MovingDownFromTheBottomRowEndsTheEpisodeAndWraps) {
  auto env = minatar_env("MinAtar/SpaceInvaders-v0");
  State s;
  s.move_timer = 0;
  s.aliens = {{9, 0}};  // at the left edge, moving left: the block moves down instead
  set_game_state(*env, s.values());
  const Frame frame = step_frame(*env, minatar::kNoop);
  EXPECT_TRUE(frame.result.terminated);
  EXPECT_TRUE(frame.on(0, 0, SpaceInvaders::kAlien));
  EXPECT_TRUE(frame.on(0, 0, SpaceInvaders::kAlienRight));
  EXPECT_EQ(frame.count(SpaceInvaders::kAlien), 1);
}

TEST(MinAtarSpaceInvaders, SetStateRejectsADirectionOfZero) {
  auto env = minatar_env("MinAtar/SpaceInvaders-v0");
  const std::vector<double> before = env->get_state();
  State s;
  s.direction = 0;
  EXPECT_THROW(set_game_state(*env, s.values()), std::invalid_argument);
  EXPECT_EQ(env->get_state(), before);
}

}  // namespace
}  // namespace moonseed::envs
