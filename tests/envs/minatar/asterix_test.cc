// Asterix's rules on hand-written states (layout in envs/minatar/asterix.h); the replay test
// checks the whole game against the package.
#include "envs/minatar/asterix.h"

#include <gtest/gtest.h>

#include <vector>

#include "tests/envs/minatar/game_test_util.h"

namespace moonseed::envs {
namespace {

using namespace testing;
using minatar::Asterix;
// The tests play -v0, whose action indices are the FullActions (minatar::kNoop, ...).

struct Slot {
  int present = 0, x = 0, right = 0, gold = 0;
};

// The player at row 5, column 5; no spawn or move due in the next step.
struct State {
  int player_x = 5, player_y = 5, spawn_speed = 10, spawn_timer = 5, move_speed = 5, move_timer = 3,
      ramp_timer = 50, ramp_index = 0;
  Slot slots[8];  // slot i is row i + 1

  std::vector<double> values() const {
    std::vector<double> v = {double(player_x),    double(player_y),   double(spawn_speed),
                             double(spawn_timer), double(move_speed), double(move_timer),
                             double(ramp_timer),  double(ramp_index), 0.0};
    for (const Slot& s : slots) {
      v.insert(v.end(), {double(s.present), double(s.x), double(s.right), double(s.gold)});
    }
    return v;
  }
};

int words_drawn(int before, int after) { return (after - before + 624) % 624; }

TEST(MinAtarAsterix, GoldThePlayerStepsOntoGivesOneAndDisappears) {
  auto env = minatar_env("MinAtar/Asterix-v0");
  State s;
  s.slots[4] = {1, 6, 0, 1};  // gold in row 5, column 6
  set_game_state(*env, s.values());
  const Frame frame = step_frame(*env, minatar::kRight);
  EXPECT_EQ(frame.result.reward, 1.f);
  EXPECT_FALSE(frame.result.terminated);
  EXPECT_TRUE(frame.on(5, 6, Asterix::kPlayer));
  EXPECT_EQ(frame.count(Asterix::kGold), 0);
  EXPECT_EQ(frame.count(Asterix::kTrail), 0);
}

TEST(MinAtarAsterix, AnEnemyMovingOntoThePlayerEndsTheEpisode) {
  auto env = minatar_env("MinAtar/Asterix-v0");
  State s;
  s.move_timer = 0;
  s.slots[4] = {1, 4, 1, 0};  // an enemy in row 5, column 4, moving right
  set_game_state(*env, s.values());
  const Frame frame = step_frame(*env, minatar::kNoop);
  EXPECT_EQ(frame.result.reward, 0.f);
  EXPECT_TRUE(frame.result.terminated);
  EXPECT_TRUE(frame.on(5, 5, Asterix::kEnemy));
  EXPECT_TRUE(frame.on(5, 4, Asterix::kTrail));
}

// The package draws a spawn's side and kind (two rand(), four words) before it looks for a free
// row, and picks among the free rows with randint, which draws nothing for a single row. The
// sticky-action draw takes two more words.
TEST(MinAtarAsterix, ASpawnDrawsSideAndKindEvenWhenNoRowIsFree) {
  for (const int free_rows : {0, 1, 2}) {
    auto env = minatar_env("MinAtar/Asterix-v0");
    State s;
    s.spawn_timer = 0;
    for (int i = free_rows; i < 8; ++i) s.slots[i] = {1, 0, 1, 0};  // enemies at column 0
    set_game_state(*env, s.values());
    const int before = generator_position(*env);
    const Frame frame = step_frame(*env, minatar::kNoop);
    EXPECT_EQ(words_drawn(before, generator_position(*env)), free_rows == 2 ? 7 : 6) << free_rows;
    EXPECT_EQ(frame.count(Asterix::kEnemy) + frame.count(Asterix::kGold),
              free_rows == 0 ? 8 : 9 - free_rows);
    EXPECT_EQ(game_state(*env)[3], 9) << "the spawn timer restarts at the spawn speed, minus one";
  }
}

TEST(MinAtarAsterix, RampingShortensTheSpawnAndMoveIntervals) {
  for (const bool ramping : {true, false}) {
    auto env = minatar_env("MinAtar/Asterix-v0", ramping);
    State s;
    s.spawn_speed = 9;
    s.ramp_index = 1;  // an odd ramp also speeds up the moves
    s.ramp_timer = -1;
    set_game_state(*env, s.values());
    step_frame(*env, minatar::kNoop);
    const std::vector<double> after = game_state(*env);
    EXPECT_EQ(after[2], ramping ? 8 : 9) << "spawn speed";
    EXPECT_EQ(after[4], ramping ? 4 : 5) << "move speed";
    EXPECT_EQ(after[6], ramping ? 100 : -1) << "ramp timer";
    EXPECT_EQ(after[7], ramping ? 2 : 1) << "ramp index";
  }
}

TEST(MinAtarAsterix, SetStateRejectsAnImpossibleEntity) {
  auto env = minatar_env("MinAtar/Asterix-v0");
  const std::vector<double> before = env->get_state();
  State s;
  s.slots[2] = {0, 3, 0, 0};  // an empty slot with a position
  EXPECT_THROW(set_game_state(*env, s.values()), std::invalid_argument);
  s.slots[2] = {1, 10, 0, 0};
  EXPECT_THROW(set_game_state(*env, s.values()), std::invalid_argument);
  EXPECT_EQ(env->get_state(), before);
}

}  // namespace
}  // namespace moonseed::envs
