// MinAtar Seaquest: the player's submarine (front and back cells) swims rows 0..8 and fires
// bullets from its front; enemy fish and enemy submarines cross rows 1..8 from either side
// (subs also shoot); divers cross too and are picked up by swimming onto them (at most 6 on
// board). +1 per enemy a bullet hits. Oxygen (200) runs down by one every frame below the top
// row. Surfacing (reaching row 0 from below) with divers refills the oxygen and drops one
// diver; with all six it drops them all and also gives +oxygen * 10 // 200 (the package then
// still subtracts one: the diver count is -1, and a later surfacing without pickups takes it
// further down instead of ending the game). The episode ends when an enemy, an enemy bullet or
// an empty oxygen tank reaches the player, or on surfacing with exactly no divers.
// Difficulty ramp (on by default): each surfacing spawns enemies one frame sooner (20 frames
// down to 1) and, every second surfacing, moves them one frame sooner (every 5 frames down to
// every 2). Channels: sub front, sub back, friendly bullet, trail (the cell behind each enemy
// and diver), enemy bullet, enemy fish, enemy sub, oxygen gauge, diver gauge, diver. Minimal
// actions: all six.
//
// The package keeps entities in Python lists it edits while iterating them; Seaquest replays
// those lists' semantics exactly (see seaquest.cc).
//
// Saved state (13 values, then five counted lists): oxygen, diver count, sub x, sub y, sub
// facing right (0/1), enemy spawn interval, enemy spawn timer, diver spawn timer, enemy move
// interval, ramp index, shot timer, surfaced (0/1), terminal (0/1); then each list as its count
// followed by its entities: player bullets (x, y, right), enemy bullets (x, y, right), fish
// (x, y, right, move timer), subs (x, y, right, move timer, shot timer), divers (x, y, right,
// move timer).
#pragma once

#include <vector>

#include "envs/minatar/game.h"

namespace moonseed::envs::minatar {

class Seaquest final : public Game {
 public:
  explicit Seaquest(bool difficulty_ramping) : ramping_(difficulty_ramping) {}

  const char* name() const override { return "Seaquest"; }
  int channels() const override { return 10; }
  std::vector<int> minimal_actions() const override {
    return {kNoop, kLeft, kUp, kRight, kDown, kFire};
  }
  void reset(LegacyRandomState& rng) override;
  Outcome act(int action, LegacyRandomState& rng) override;
  void observe(uint8_t* obs) const override;
  void save(std::vector<double>& out) const override;
  void load(const double* in, size_t size, const std::string& env_id) override;

  // One of the package's entity lists ([x, y, right, timers...]); unused timers stay 0, so
  // two entities of one list are equal exactly when the package's lists are.
  struct Entity {
    int x = 0, y = 0, right = 0, move_timer = 0, shot_timer = 0;
    bool operator==(const Entity& o) const {
      return x == o.x && y == o.y && right == o.right && move_timer == o.move_timer &&
             shot_timer == o.shot_timer;
    }
  };

 private:
  void spawn_enemy(LegacyRandomState& rng);
  void spawn_diver(LegacyRandomState& rng);
  int surface();

  bool ramping_;
  int oxygen_ = 200, diver_count_ = 0, sub_x_ = 5, sub_y_ = 0;
  bool sub_right_ = false;
  int e_spawn_speed_ = 20, e_spawn_timer_ = 20, d_spawn_timer_ = 30, move_speed_ = 5;
  int ramp_index_ = 0, shot_timer_ = 0;
  bool surface_ = true, terminal_ = false;
  std::vector<Entity> f_bullets_, e_bullets_, e_fish_, e_subs_, divers_;
};

}  // namespace moonseed::envs::minatar
