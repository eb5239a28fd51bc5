// MinAtar Breakout: a paddle on the bottom row, a ball moving on diagonals, three rows of
// bricks (+1 each, refilled when all are gone and the ball reaches the bottom row). The episode
// ends when the ball passes the paddle. Channels: paddle, ball, trail (the ball's previous
// cell), brick. Minimal actions: noop, left, right. No difficulty ramp.
//
// Saved state (37 + 100 values): ball x, ball y, ball direction (0 up-left, 1 up-right,
// 2 down-right, 3 down-left), paddle x, strike (0/1), last x, last y, terminal (0/1), then the
// 10 x 10 brick map row by row.
#pragma once

#include <array>

#include "envs/minatar/game.h"

namespace moonseed::envs::minatar {

class Breakout final : public Game {
 public:
  const char* name() const override { return "Breakout"; }
  int channels() const override { return 4; }
  std::vector<int> minimal_actions() const override { return {kNoop, kLeft, kRight}; }
  void reset(LegacyRandomState& rng) override;
  Outcome act(int action, LegacyRandomState& rng) override;
  void observe(uint8_t* obs) const override;
  void save(std::vector<double>& out) const override;
  void load(const double* in, size_t size, const std::string& env_id) override;

 private:
  void fill_bricks();

  int ball_x_ = 0, ball_y_ = 3, ball_dir_ = 2, pos_ = 4;
  bool strike_ = false;
  int last_x_ = 0, last_y_ = 3;
  bool terminal_ = false;
  std::array<std::array<bool, kSize>, kSize> bricks_{};
};

}  // namespace moonseed::envs::minatar
