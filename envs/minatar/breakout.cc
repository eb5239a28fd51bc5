#include "envs/minatar/breakout.h"

#include <algorithm>

namespace moonseed::envs::minatar {
namespace {

// Direction after a bounce off a side wall, off the top or a brick, off the paddle's edge.
constexpr int kSideBounce[4] = {1, 0, 3, 2};
constexpr int kVerticalBounce[4] = {3, 2, 1, 0};
constexpr int kEdgeBounce[4] = {2, 3, 0, 1};
constexpr int kStepX[4] = {-1, 1, 1, -1};
constexpr int kStepY[4] = {-1, -1, 1, 1};

enum Channel { kPaddle = 0, kBall = 1, kTrail = 2, kBrick = 3 };
constexpr size_t kScalars = 8;

}  // namespace

void Breakout::fill_bricks() {
  for (int row = 1; row <= 3; ++row) bricks_[row].fill(true);
}

void Breakout::reset(LegacyRandomState& rng) {
  ball_y_ = 3;
  const bool right = rng.randint(0, 2) == 1;
  ball_x_ = right ? 9 : 0;
  ball_dir_ = right ? 3 : 2;
  pos_ = 4;
  bricks_ = {};
  fill_bricks();
  strike_ = false;
  last_x_ = ball_x_;
  last_y_ = ball_y_;
  terminal_ = false;
}

Outcome Breakout::act(int action, LegacyRandomState& /*rng*/) {
  Outcome out;
  if (action == kLeft) pos_ = std::max(0, pos_ - 1);
  if (action == kRight) pos_ = std::min(9, pos_ + 1);

  last_x_ = ball_x_;
  last_y_ = ball_y_;
  int new_x = ball_x_ + kStepX[ball_dir_];
  int new_y = ball_y_ + kStepY[ball_dir_];
  bool strike_toggle = false;
  if (new_x < 0 || new_x > 9) {
    new_x = std::clamp(new_x, 0, 9);
    ball_dir_ = kSideBounce[ball_dir_];
  }
  if (new_y < 0) {
    new_y = 0;
    ball_dir_ = kVerticalBounce[ball_dir_];
  } else if (bricks_[new_y][new_x]) {
    strike_toggle = true;
    if (!strike_) {
      out.reward += 1;
      strike_ = true;
      bricks_[new_y][new_x] = false;
      new_y = last_y_;
      ball_dir_ = kVerticalBounce[ball_dir_];
    }
  } else if (new_y == 9) {
    bool any_brick = false;
    for (const auto& row : bricks_) any_brick = any_brick || std::count(row.begin(), row.end(), true) > 0;
    if (!any_brick) fill_bricks();
    if (ball_x_ == pos_) {
      ball_dir_ = kVerticalBounce[ball_dir_];
      new_y = last_y_;
    } else if (new_x == pos_) {
      ball_dir_ = kEdgeBounce[ball_dir_];
      new_y = last_y_;
    } else {
      terminal_ = true;
    }
  }
  if (!strike_toggle) strike_ = false;
  ball_x_ = new_x;
  ball_y_ = new_y;
  out.terminal = terminal_;
  return out;
}

void Breakout::observe(uint8_t* obs) const {
  const int c = channels();
  set_cell(obs, c, ball_y_, ball_x_, kBall);
  set_cell(obs, c, 9, pos_, kPaddle);
  set_cell(obs, c, last_y_, last_x_, kTrail);
  for (int row = 0; row < kSize; ++row) {
    for (int col = 0; col < kSize; ++col) {
      if (bricks_[row][col]) set_cell(obs, c, row, col, kBrick);
    }
  }
}

void Breakout::save(std::vector<double>& out) const {
  for (int v : {ball_x_, ball_y_, ball_dir_, pos_, static_cast<int>(strike_), last_x_, last_y_,
                static_cast<int>(terminal_)}) {
    out.push_back(v);
  }
  for (const auto& row : bricks_) {
    for (bool brick : row) out.push_back(brick ? 1.0 : 0.0);
  }
}

void Breakout::load(const double* in, size_t size, const std::string& env_id) {
  require_state_size(size, kScalars + kSize * kSize, name(), env_id);
  Breakout next;
  next.ball_x_ = state_int(in[0], 0, 9, "ball x", env_id);
  next.ball_y_ = state_int(in[1], 0, 9, "ball y", env_id);
  next.ball_dir_ = state_int(in[2], 0, 3, "ball direction", env_id);
  next.pos_ = state_int(in[3], 0, 9, "paddle x", env_id);
  next.strike_ = state_int(in[4], 0, 1, "strike", env_id) == 1;
  next.last_x_ = state_int(in[5], 0, 9, "last x", env_id);
  next.last_y_ = state_int(in[6], 0, 9, "last y", env_id);
  next.terminal_ = state_int(in[7], 0, 1, "terminal", env_id) == 1;
  for (size_t i = 0; i < kSize * kSize; ++i) {
    next.bricks_[i / kSize][i % kSize] = state_int(in[kScalars + i], 0, 1, "brick", env_id) == 1;
  }
  *this = next;
}

}  // namespace moonseed::envs::minatar
