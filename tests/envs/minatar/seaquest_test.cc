// MinAtar Seaquest's rules on hand-built scenes (set through set_state, layout in
// envs/minatar/seaquest.h); the replay test checks the rest against the package.
#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/envs/minatar/game_test_util.h"

namespace moonseed::envs {
namespace {

using namespace testing;
// The tests play -v0, whose action indices are the FullActions.
enum Action : int32_t { kNoop = 0, kLeft = 1, kUp = 2, kRight = 3, kDown = 4, kFire = 5 };
enum Channel { kFriendlyBullet = 2, kEnemyBullet = 4, kEnemyFish = 5, kEnemySub = 6, kOxygen = 7, kDivers = 8 };

// The game's saved values, named (seaquest.h). Nothing spawns for 20 frames.
struct Scene {
  double oxygen = 200, divers_on_board = 0, x = 5, y = 1, right = 0, spawn_interval = 20,
         spawn_timer = 20, diver_timer = 30, move_interval = 5, ramp_index = 0, shot_timer = 0,
         surfaced = 0, terminal = 0;
  // Player bullets (x, y, right), enemy bullets (same), fish (+ move timer), subs (+ shot
  // timer), divers (x, y, right, move timer).
  std::vector<std::vector<double>> lists[5];

  std::vector<double> values() const {
    std::vector<double> out = {oxygen,        divers_on_board, x,          y,          right,
                               spawn_interval, spawn_timer,    diver_timer, move_interval,
                               ramp_index,    shot_timer,      surfaced,   terminal};
    for (const auto& list : lists) {
      out.push_back(static_cast<double>(list.size()));
      for (const auto& entity : list) out.insert(out.end(), entity.begin(), entity.end());
    }
    return out;
  }
};

enum Field { kOxygenField = 0, kDiverCount = 1, kSpawnInterval = 5, kMoveInterval = 8, kRampIndex = 9 };

class SeaquestTest : public ::testing::Test {
 protected:
  void start(const Scene& scene, bool ramping = true) {
    env_ = minatar_env("MinAtar/Seaquest-v0", ramping);
    set_game_state(*env_, scene.values());
  }
  std::vector<double> game() const { return game_state(*env_); }
  StepResult step(int32_t action) {
    frame_ = step_frame(*env_, action);
    return frame_.result;
  }
  bool cell(int row, int column, int channel) const { return frame_.on(row, column, channel); }
  int row_count(int row, int channel) const {
    int n = 0;
    for (int column = 0; column < 10; ++column) n += cell(row, column, channel) ? 1 : 0;
    return n;
  }
  int channel_count(int channel) const { return frame_.count(channel); }

  std::unique_ptr<Env> env_;
  Frame frame_;
};

// Six divers: oxygen * 10 // 200 points, full oxygen, and the package's count of -1 (an empty
// gauge); surfacing again with that count is not "no divers", so the game goes on at -2.
TEST_F(SeaquestTest, SurfacingWithSixDiversPaysForOxygenAndLeavesMinusOne) {
  Scene scene;
  scene.divers_on_board = 6;
  scene.oxygen = 150;
  start(scene);
  StepResult result = step(kUp);
  EXPECT_EQ(result.reward, 7.f);
  EXPECT_FALSE(result.terminated);
  EXPECT_EQ(game()[kOxygenField], 200);
  EXPECT_EQ(game()[kDiverCount], -1);
  EXPECT_EQ(row_count(9, kDivers), 0);
  EXPECT_EQ(row_count(9, kOxygen), 10);

  step(kDown);
  result = step(kUp);
  EXPECT_EQ(result.reward, 0.f);
  EXPECT_FALSE(result.terminated);
  EXPECT_EQ(game()[kDiverCount], -2);
}

TEST_F(SeaquestTest, SurfacingWithoutDiversEndsTheEpisode) {
  start(Scene{});
  const StepResult result = step(kUp);
  EXPECT_EQ(result.reward, 0.f);
  EXPECT_TRUE(result.terminated);
}

// Each surfacing spawns enemies a frame sooner; every second one also moves them sooner.
TEST_F(SeaquestTest, SurfacingRampsTheDifficultyUnlessRampingIsOff) {
  for (bool ramping : {true, false}) {
    Scene scene;
    scene.divers_on_board = 3;
    start(scene, ramping);
    step(kUp);
    EXPECT_EQ(game()[kDiverCount], 2);
    EXPECT_EQ(game()[kSpawnInterval], ramping ? 19 : 20);
    EXPECT_EQ(game()[kMoveInterval], 5);
    step(kDown);
    step(kUp);
    EXPECT_EQ(game()[kDiverCount], 1);
    EXPECT_EQ(game()[kSpawnInterval], ramping ? 18 : 20);
    EXPECT_EQ(game()[kMoveInterval], ramping ? 4 : 5);
    EXPECT_EQ(game()[kRampIndex], ramping ? 2 : 0);
  }
}

// A bullet moves one cell the frame it is fired and takes the fish it lands on.
TEST_F(SeaquestTest, AFiredBulletHitsTheFishBesideTheSub) {
  Scene scene;
  scene.x = 2;
  scene.y = 4;
  scene.right = 1;
  scene.lists[2] = {{3, 4, 0, 3}};
  start(scene);
  const StepResult result = step(kFire);
  EXPECT_EQ(result.reward, 1.f);
  EXPECT_FALSE(result.terminated);
  EXPECT_EQ(channel_count(kEnemyFish), 0);
  EXPECT_EQ(channel_count(kFriendlyBullet), 0);
}

// A sub that moves onto a player's bullet is shot (+1) and still fires its own bullet that
// frame, which then moves on.
TEST_F(SeaquestTest, AShotSubStillFiresThatFrame) {
  Scene scene;
  scene.x = 8;
  scene.y = 7;
  scene.lists[0] = {{2, 3, 1}};
  scene.lists[3] = {{4, 3, 0, 0, 0}};
  start(scene);
  const StepResult result = step(kNoop);
  EXPECT_EQ(result.reward, 1.f);
  EXPECT_EQ(channel_count(kEnemySub), 0);
  EXPECT_EQ(channel_count(kFriendlyBullet), 0);
  EXPECT_EQ(channel_count(kEnemyBullet), 1);
  EXPECT_TRUE(cell(3, 2, kEnemyBullet));
}

// The package's list quirks: the newer bullet moves first (reversed order) onto the older one's
// cell and fish; list.remove then drops the OLDER bullet (the first equal in value), and the
// reverse iterator's index, shifted by that removal, yields the newer bullet again: it moves
// off the grid. No bullet is left (iterating a copy of the list would leave one at column 9).
TEST_F(SeaquestTest, TwinBulletsFollowPythonsListSemantics) {
  Scene scene;
  scene.x = 2;
  scene.y = 6;
  scene.lists[0] = {{9, 4, 1}, {8, 4, 1}};
  scene.lists[2] = {{9, 4, 0, 3}};
  start(scene);
  const StepResult result = step(kNoop);
  EXPECT_EQ(result.reward, 1.f);
  EXPECT_EQ(channel_count(kFriendlyBullet), 0);
  EXPECT_EQ(channel_count(kEnemyFish), 0);
}

TEST_F(SeaquestTest, AnEmptyTankEndsTheEpisodeBelowTheSurface) {
  Scene scene;
  scene.oxygen = 1;
  scene.y = 3;
  start(scene);
  EXPECT_FALSE(step(kNoop).terminated);  // the last unit goes
  EXPECT_TRUE(step(kNoop).terminated);
}

TEST_F(SeaquestTest, LoadRejectsCountsAndCellsItCannotHaveWritten) {
  start(Scene{});
  const std::vector<double> before = env_->get_state();
  auto message = [&](const std::vector<double>& game) {
    try {
      set_game_state(*env_, game);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  Scene scene;
  std::vector<double> values = scene.values();
  values[15] = 1;  // the fish count: one announced, none follows
  EXPECT_NE(message(values).find("MinAtar/Seaquest-v0 set_state: fish count = 1"), std::string::npos)
      << message(values);
  scene.x = 9;  // facing left on the last column: the back cell would be off the grid
  EXPECT_NE(message(scene.values()).find("sub x = 9"), std::string::npos);
  scene.x = 5;
  scene.lists[3] = {{4, 3, 0, 0, 11}};
  EXPECT_NE(message(scene.values()).find("sub shot timer = 11"), std::string::npos);
  EXPECT_EQ(env_->get_state(), before);
}

}  // namespace
}  // namespace moonseed::envs
