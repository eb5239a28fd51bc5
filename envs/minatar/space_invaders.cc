#include "envs/minatar/space_invaders.h"

#include <algorithm>
#include <stdexcept>

namespace moonseed::envs::minatar {
namespace {

constexpr size_t kScalars = 8;
constexpr size_t kCells = kSize * kSize;

bool column_has(const std::array<std::array<bool, kSize>, kSize>& grid, int column) {
  for (const auto& row : grid) {
    if (row[column]) return true;
  }
  return false;
}

}  // namespace

void SpaceInvaders::fill_wave() {
  for (int row = 0; row < 4; ++row) {
    for (int col = 2; col < 8; ++col) aliens_[row][col] = true;
  }
}

int SpaceInvaders::alien_count() const {
  int n = 0;
  for (const auto& row : aliens_) n += static_cast<int>(std::count(row.begin(), row.end(), true));
  return n;
}

void SpaceInvaders::reset(LegacyRandomState& /*rng*/) {
  const bool ramping = ramping_;
  *this = SpaceInvaders(ramping);
}

void SpaceInvaders::move_aliens() {
  move_timer_ = std::min(alien_count(), move_interval_);
  if ((column_has(aliens_, 0) && direction_ < 0) || (column_has(aliens_, 9) && direction_ > 0)) {
    direction_ = -direction_;
    const auto& bottom = aliens_[kSize - 1];
    if (std::count(bottom.begin(), bottom.end(), true) > 0) terminal_ = true;
    // np.roll down one row: the bottom row wraps to the top.
    std::rotate(aliens_.rbegin(), aliens_.rbegin() + 1, aliens_.rend());
  } else {
    for (auto& row : aliens_) {
      if (direction_ > 0) {
        std::rotate(row.rbegin(), row.rbegin() + 1, row.rend());
      } else {
        std::rotate(row.begin(), row.begin() + 1, row.end());
      }
    }
  }
  if (aliens_[kSize - 1][pos_]) terminal_ = true;
}

void SpaceInvaders::alien_shoots() {
  shot_timer_ = kShotInterval;
  // Columns by distance from the cannon, the lower column first among equals.
  for (int distance = 0; distance < kSize; ++distance) {
    for (int col : {pos_ - distance, pos_ + distance}) {
      if (col < 0 || col >= kSize || !column_has(aliens_, col)) continue;
      int lowest = kSize - 1;
      while (!aliens_[lowest][col]) --lowest;
      alien_bullets_[lowest][col] = true;
      return;
    }
  }
}

Outcome SpaceInvaders::act(int action, LegacyRandomState& /*rng*/) {
  Outcome out;
  if (action == kFire && cooldown_ == 0) {
    bullets_[kSize - 1][pos_] = true;
    cooldown_ = kCoolDown;
  } else if (action == kLeft) {
    pos_ = std::max(0, pos_ - 1);
  } else if (action == kRight) {
    pos_ = std::min(9, pos_ + 1);
  }

  // Cannon bullets move up and leave at the top; alien bullets move down and leave at the bottom.
  std::rotate(bullets_.begin(), bullets_.begin() + 1, bullets_.end());
  bullets_[kSize - 1].fill(false);
  std::rotate(alien_bullets_.rbegin(), alien_bullets_.rbegin() + 1, alien_bullets_.rend());
  alien_bullets_[0].fill(false);
  if (alien_bullets_[kSize - 1][pos_]) terminal_ = true;

  if (aliens_[kSize - 1][pos_]) terminal_ = true;
  if (move_timer_ == 0) move_aliens();
  if (shot_timer_ == 0) alien_shoots();

  for (int row = 0; row < kSize; ++row) {
    for (int col = 0; col < kSize; ++col) {
      if (aliens_[row][col] && bullets_[row][col]) {
        out.reward += 1;
        aliens_[row][col] = bullets_[row][col] = false;
      }
    }
  }

  if (cooldown_ > 0) cooldown_ -= 1;
  move_timer_ -= 1;
  shot_timer_ -= 1;
  if (alien_count() == 0) {
    if (move_interval_ > kFastestMoveInterval && ramping_) {
      move_interval_ -= 1;
      ramp_index_ += 1;
    }
    fill_wave();
  }
  out.terminal = terminal_;
  return out;
}

void SpaceInvaders::observe(uint8_t* obs) const {
  const int c = channels();
  set_cell(obs, c, kSize - 1, pos_, kCannon);
  for (int row = 0; row < kSize; ++row) {
    for (int col = 0; col < kSize; ++col) {
      if (aliens_[row][col]) {
        set_cell(obs, c, row, col, kAlien);
        set_cell(obs, c, row, col, direction_ < 0 ? kAlienLeft : kAlienRight);
      }
      if (bullets_[row][col]) set_cell(obs, c, row, col, kBullet);
      if (alien_bullets_[row][col]) set_cell(obs, c, row, col, kAlienBullet);
    }
  }
}

void SpaceInvaders::save(std::vector<double>& out) const {
  for (int v : {pos_, direction_, move_interval_, move_timer_, shot_timer_, ramp_index_, cooldown_,
                static_cast<int>(terminal_)}) {
    out.push_back(v);
  }
  for (const Grid* grid : {&aliens_, &bullets_, &alien_bullets_}) {
    for (const auto& row : *grid) {
      for (bool cell : row) out.push_back(cell ? 1.0 : 0.0);
    }
  }
}

void SpaceInvaders::load(const double* in, size_t size, const std::string& env_id) {
  require_state_size(size, kScalars + 3 * kCells, name(), env_id);
  SpaceInvaders next(ramping_);
  next.pos_ = state_int(in[0], 0, 9, "cannon x", env_id);
  next.direction_ = state_int(in[1], -1, 1, "alien direction", env_id);
  if (next.direction_ == 0) {
    throw std::invalid_argument(env_id + " set_state: alien direction = 0 is neither -1 nor 1");
  }
  next.move_interval_ =
      state_int(in[2], kFastestMoveInterval, kMoveInterval, "move interval", env_id);
  next.move_timer_ = state_int(in[3], 0, kMoveInterval, "move timer", env_id);
  next.shot_timer_ = state_int(in[4], 0, kShotInterval, "alien shot timer", env_id);
  next.ramp_index_ =
      state_int(in[5], 0, kMoveInterval - kFastestMoveInterval, "ramp index", env_id);
  next.cooldown_ = state_int(in[6], 0, kCoolDown, "cannon cooldown", env_id);
  next.terminal_ = state_int(in[7], 0, 1, "terminal", env_id) == 1;
  const char* names[3] = {"alien", "cannon bullet", "alien bullet"};
  Grid* grids[3] = {&next.aliens_, &next.bullets_, &next.alien_bullets_};
  for (size_t g = 0; g < 3; ++g) {
    for (size_t i = 0; i < kCells; ++i) {
      (*grids[g])[i / kSize][i % kSize] =
          state_int(in[kScalars + g * kCells + i], 0, 1, names[g], env_id) == 1;
    }
  }
  *this = next;
}

}  // namespace moonseed::envs::minatar
