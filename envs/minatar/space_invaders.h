// MinAtar SpaceInvaders: a cannon on the bottom row shoots upward (at most once every 5 frames)
// at a block of 4 x 6 aliens. The aliens step sideways every `move interval` frames (12, or the
// number of aliens left when fewer); when one reaches the edge they are moving toward, the block
// instead moves down one row and turns. Every 10 frames the alien nearest the cannon's column
// (its lowest one; ties go to the lower column) drops a bullet. +1 per alien hit. The episode
// ends when an alien or an alien's bullet reaches the cannon, or the block moves down while in
// the bottom row. A cleared wave is refilled; with difficulty_ramping the move interval of each
// new wave is one less, down to 6. Channels: cannon, alien, alien moving left, alien moving
// right, cannon bullet, alien bullet. Minimal actions: noop, left, right, fire.
//
// Package quirks kept: moving down wraps the grid (an alien in the bottom row appears in the top
// row of the final observation); the direction and move timer carry over into a new wave.
//
// Saved state (8 + 300 values): cannon x, direction (-1 left, 1 right), move interval, move
// timer, shot timer (the aliens'), ramp index, cooldown (the cannon's), terminal (0/1), then the
// alien, cannon-bullet and alien-bullet maps, each 10 x 10 row by row.
#pragma once

#include <array>

#include "envs/minatar/game.h"

namespace moonseed::envs::minatar {

class SpaceInvaders final : public Game {
 public:
  enum Channel : int {
    kCannon = 0,
    kAlien = 1,
    kAlienLeft = 2,
    kAlienRight = 3,
    kBullet = 4,
    kAlienBullet = 5
  };
  static constexpr int kCoolDown = 5;
  static constexpr int kMoveInterval = 12;
  static constexpr int kFastestMoveInterval = 6;
  static constexpr int kShotInterval = 10;

  explicit SpaceInvaders(bool difficulty_ramping) : ramping_(difficulty_ramping) { fill_wave(); }

  const char* name() const override { return "SpaceInvaders"; }
  int channels() const override { return 6; }
  std::vector<int> minimal_actions() const override { return {kNoop, kLeft, kRight, kFire}; }
  void reset(LegacyRandomState& rng) override;
  Outcome act(int action, LegacyRandomState& rng) override;
  void observe(uint8_t* obs) const override;
  void save(std::vector<double>& out) const override;
  void load(const double* in, size_t size, const std::string& env_id) override;

 private:
  using Grid = std::array<std::array<bool, kSize>, kSize>;
  void fill_wave();
  int alien_count() const;
  void move_aliens();
  void alien_shoots();

  bool ramping_;
  int pos_ = 5, direction_ = -1;
  int move_interval_ = kMoveInterval, move_timer_ = kMoveInterval;
  int shot_timer_ = kShotInterval, ramp_index_ = 0, cooldown_ = 0;
  bool terminal_ = false;
  Grid aliens_{}, bullets_{}, alien_bullets_{};
};

}  // namespace moonseed::envs::minatar
