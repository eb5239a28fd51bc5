#include "envs/minatar/asterix.h"

#include <algorithm>

namespace moonseed::envs::minatar {
namespace {

constexpr size_t kScalars = 9;
constexpr size_t kEntityValues = 4;

}  // namespace

void Asterix::reset(LegacyRandomState& /*rng*/) {
  const bool ramping = ramping_;
  *this = Asterix(ramping);
}

void Asterix::spawn(LegacyRandomState& rng) {
  // The package draws the side and the kind before it looks for a free row.
  const bool right = rng.rand() < 1.0 / 2;
  const bool gold = rng.rand() < 1.0 / 3;
  std::vector<int> free;
  for (int slot = 0; slot < kSlots; ++slot) {
    if (!entities_[slot].present) free.push_back(slot);
  }
  if (free.empty()) return;
  // randint(1) draws nothing: a single free row costs no number.
  const int slot = free[static_cast<size_t>(rng.randint(0, static_cast<int64_t>(free.size())))];
  entities_[slot] = Entity{true, right ? 0 : 9, right, gold};
}

void Asterix::touch(Entity& e, int row, int& reward) {
  if (!e.present || e.x != player_x_ || row != player_y_) return;
  if (e.gold) {
    e = Entity{};
    reward += 1;
  } else {
    terminal_ = true;
  }
}

Outcome Asterix::act(int action, LegacyRandomState& rng) {
  Outcome out;
  if (spawn_timer_ == 0) {
    spawn(rng);
    spawn_timer_ = spawn_speed_;
  }
  if (action == kLeft) player_x_ = std::max(0, player_x_ - 1);
  if (action == kRight) player_x_ = std::min(9, player_x_ + 1);
  if (action == kUp) player_y_ = std::max(1, player_y_ - 1);
  if (action == kDown) player_y_ = std::min(8, player_y_ + 1);

  for (int slot = 0; slot < kSlots; ++slot) touch(entities_[slot], slot + 1, out.reward);
  if (move_timer_ == 0) {
    move_timer_ = move_speed_;
    for (int slot = 0; slot < kSlots; ++slot) {
      Entity& e = entities_[slot];
      if (!e.present) continue;
      e.x += e.right ? 1 : -1;
      if (e.x < 0 || e.x > 9) {
        e = Entity{};  // left the screen
        continue;
      }
      touch(e, slot + 1, out.reward);
    }
  }
  spawn_timer_ -= 1;
  move_timer_ -= 1;

  if (ramping_ && (spawn_speed_ > 1 || move_speed_ > 1)) {
    if (ramp_timer_ >= 0) {
      ramp_timer_ -= 1;
    } else {
      if (move_speed_ > 1 && ramp_index_ % 2 == 1) move_speed_ -= 1;
      if (spawn_speed_ > 1) spawn_speed_ -= 1;
      ramp_index_ += 1;
      ramp_timer_ = kRampInterval;
    }
  }
  out.terminal = terminal_;
  return out;
}

void Asterix::observe(uint8_t* obs) const {
  const int c = channels();
  set_cell(obs, c, player_y_, player_x_, kPlayer);
  for (int slot = 0; slot < kSlots; ++slot) {
    const Entity& e = entities_[slot];
    if (!e.present) continue;
    set_cell(obs, c, slot + 1, e.x, e.gold ? kGold : kEnemy);
    const int back_x = e.right ? e.x - 1 : e.x + 1;
    if (back_x >= 0 && back_x <= 9) set_cell(obs, c, slot + 1, back_x, kTrail);
  }
}

void Asterix::save(std::vector<double>& out) const {
  for (int v : {player_x_, player_y_, spawn_speed_, spawn_timer_, move_speed_, move_timer_,
                ramp_timer_, ramp_index_, static_cast<int>(terminal_)}) {
    out.push_back(v);
  }
  for (const Entity& e : entities_) {
    for (int v :
         {static_cast<int>(e.present), e.x, static_cast<int>(e.right), static_cast<int>(e.gold)}) {
      out.push_back(v);
    }
  }
}

void Asterix::load(const double* in, size_t size, const std::string& env_id) {
  require_state_size(size, kScalars + kEntityValues * kSlots, name(), env_id);
  Asterix next(ramping_);
  next.player_x_ = state_int(in[0], 0, 9, "player x", env_id);
  next.player_y_ = state_int(in[1], 1, 8, "player y", env_id);
  next.spawn_speed_ = state_int(in[2], 1, kInitSpawnSpeed, "spawn speed", env_id);
  next.spawn_timer_ = state_int(in[3], 0, kInitSpawnSpeed, "spawn timer", env_id);
  next.move_speed_ = state_int(in[4], 1, kInitMoveSpeed, "move speed", env_id);
  next.move_timer_ = state_int(in[5], 0, kInitMoveSpeed, "move timer", env_id);
  next.ramp_timer_ = state_int(in[6], -1, kRampInterval, "ramp timer", env_id);
  // Each ramp takes one off the spawn speed, so at most 9 happen.
  next.ramp_index_ = state_int(in[7], 0, kInitSpawnSpeed - 1, "ramp index", env_id);
  next.terminal_ = state_int(in[8], 0, 1, "terminal", env_id) == 1;
  for (size_t slot = 0; slot < kSlots; ++slot) {
    const double* v = in + kScalars + kEntityValues * slot;
    Entity& e = next.entities_[slot];
    e.present = state_int(v[0], 0, 1, "entity present", env_id) == 1;
    // An empty slot is saved as zeros.
    const int high = e.present ? 1 : 0;
    e.x = state_int(v[1], 0, e.present ? 9 : 0, "entity x", env_id);
    e.right = state_int(v[2], 0, high, "entity moving right", env_id) == 1;
    e.gold = state_int(v[3], 0, high, "entity gold", env_id) == 1;
  }
  *this = next;
}

}  // namespace moonseed::envs::minatar
