// MinAtar Asterix: the player moves in the four directions over rows 1..8; each of those rows is
// a slot that may hold one entity, an enemy or gold, which enters from the left or the right
// edge and crosses the row. Touching gold gives +1 and removes it; touching an enemy ends the
// episode. A new entity spawns every `spawn speed` frames (into a random free row, on a random
// side, gold with odds 1/3; nothing when every row is taken, though the side and kind are drawn
// anyway), and entities move one cell every `move speed` frames. With difficulty_ramping, every
// 102nd frame the spawn interval shrinks by one (10 down to 1) and on every second of these
// ramps the move interval too (5 down to 1); the ramps stop when both are 1. Channels: player,
// enemy, trail (the cell an entity came from), gold. Minimal actions: noop, left, up, right, down.
//
// Saved state (9 + 8 * 4 values): player x, player y, spawn speed, spawn timer, move speed,
// move timer, ramp timer, ramp index, terminal (0/1), then for each row slot 1..8: present
// (0/1), x, moving right (0/1), gold (0/1) (an empty slot saves four zeros).
#pragma once

#include <array>

#include "envs/minatar/game.h"

namespace moonseed::envs::minatar {

class Asterix final : public Game {
 public:
  enum Channel : int { kPlayer = 0, kEnemy = 1, kTrail = 2, kGold = 3 };
  static constexpr int kInitSpawnSpeed = 10;
  static constexpr int kInitMoveSpeed = 5;
  static constexpr int kRampInterval = 100;
  static constexpr int kSlots = 8;

  explicit Asterix(bool difficulty_ramping) : ramping_(difficulty_ramping) {}

  const char* name() const override { return "Asterix"; }
  int channels() const override { return 4; }
  std::vector<int> minimal_actions() const override { return {kNoop, kLeft, kUp, kRight, kDown}; }
  void reset(LegacyRandomState& rng) override;
  Outcome act(int action, LegacyRandomState& rng) override;
  void observe(uint8_t* obs) const override;
  void save(std::vector<double>& out) const override;
  void load(const double* in, size_t size, const std::string& env_id) override;

 private:
  // The entity of row slot + 1.
  struct Entity {
    bool present = false;
    int x = 0;
    bool right = false;  // moving right (entered on the left)
    bool gold = false;
  };
  void spawn(LegacyRandomState& rng);
  // Gold under the player is collected (+1 to `reward`), an enemy there ends the episode.
  void touch(Entity& e, int row, int& reward);

  bool ramping_;
  int player_x_ = 5, player_y_ = 5;
  std::array<Entity, kSlots> entities_{};
  int spawn_speed_ = kInitSpawnSpeed, spawn_timer_ = kInitSpawnSpeed;
  int move_speed_ = kInitMoveSpeed, move_timer_ = kInitMoveSpeed;
  int ramp_timer_ = kRampInterval, ramp_index_ = 0;
  bool terminal_ = false;
};

}  // namespace moonseed::envs::minatar
