#include "envs/minatar/seaquest.h"

#include <algorithm>
#include <cstddef>
#include <optional>

namespace moonseed::envs::minatar {
namespace {

constexpr int kMaxOxygen = 200;
constexpr int kInitSpawnSpeed = 20;
constexpr int kDiverSpawnSpeed = 30;
constexpr int kInitMoveInterval = 5;
constexpr int kShotCoolDown = 5;
constexpr int kEnemyShotInterval = 10;
constexpr int kDiverMoveInterval = 5;
constexpr int kMaxDivers = 6;
constexpr int kMaxRampIndex = 19;  // the ramp stops at spawn interval 1 and move interval 2
// The package lets the diver count go below 0 (see seaquest.h); no episode gets this far.
constexpr int kLowestDiverCount = -1000000000;

enum Channel {
  kSubFront = 0,
  kSubBack = 1,
  kFriendlyBullet = 2,
  kTrail = 3,
  kEnemyBullet = 4,
  kEnemyFish = 5,
  kEnemySub = 6,
  kOxygenGauge = 7,
  kDiverGauge = 8,
  kDiver = 9
};
constexpr size_t kScalars = 13;
constexpr int kLists = 5;

using Entity = Seaquest::Entity;

// The package's entity lists within one act(): Python lists holding references to mutable
// [x, y, ...] objects. An object is an index into `objects`, a list a vector of those indices,
// so an object the loop body keeps using after a removal stays what Python's would be.
using List = std::vector<size_t>;

class Objects {
 public:
  List adopt(const std::vector<Entity>& values) {
    List list;
    for (const Entity& e : values) list.push_back(make(e));
    return list;
  }
  std::vector<Entity> values(const List& list) const {
    std::vector<Entity> out;
    for (size_t object : list) out.push_back(objects_[object]);
    return out;
  }
  void append(List& list, const Entity& e) { list.push_back(make(e)); }
  // list.remove(x): drops the FIRST element equal in value to x, which may be another object
  // than x (the package's objects stay in the list as they were otherwise).
  void remove(List& list, size_t x) {
    const auto equal = std::find_if(list.begin(), list.end(),
                                    [&](size_t object) { return objects_[object] == objects_[x]; });
    if (equal != list.end()) list.erase(equal);
  }
  // The first element of `list` on x's cell (`for y in list: if y[0:2] == x[0:2]: ...; break`).
  std::optional<size_t> first_on_cell(const List& list, size_t x) const {
    for (size_t object : list) {
      if (objects_[object].x == objects_[x].x && objects_[object].y == objects_[x].y) return object;
    }
    return std::nullopt;
  }
  Entity& operator[](size_t object) { return objects_[object]; }

 private:
  size_t make(const Entity& e) {
    objects_.push_back(e);
    return objects_.size() - 1;
  }
  std::vector<Entity> objects_;
};

// `for x in reversed(list)` while the body removes from the list: CPython's reverse iterator
// keeps an index that goes down by one per item and stops once it is outside the list, so a
// removal before the index shifts what it yields next (possibly the same object again).
template <typename Body>
void for_reversed(const List& list, Body&& body) {
  auto next = static_cast<std::ptrdiff_t>(list.size()) - 1;
  while (next >= 0 && next < static_cast<std::ptrdiff_t>(list.size())) {
    body(list[static_cast<size_t>(next--)]);
  }
}

void advance(Entity& e) { e.x += e.right != 0 ? 1 : -1; }
bool off_grid(const Entity& e) { return e.x < 0 || e.x > 9; }

}  // namespace

void Seaquest::reset(LegacyRandomState& /*rng*/) {
  *this = Seaquest(ramping_);  // the members start as the package's reset() sets them
}

void Seaquest::spawn_enemy(LegacyRandomState& rng) {
  // All three draws come first, also when the spawn is then dropped.
  const bool right = rng.rand() < 1.0 / 2;
  const bool is_sub = rng.rand() < 1.0 / 3;
  const int y = static_cast<int>(rng.randint(1, 9));
  // No enemy in a row where one swims the other way.
  for (const std::vector<Entity>* enemies : {&e_subs_, &e_fish_}) {
    for (const Entity& e : *enemies) {
      if (e.y == y && (e.right != 0) != right) return;
    }
  }
  const Entity enemy{right ? 0 : 9, y, right, move_speed_, is_sub ? kEnemyShotInterval : 0};
  (is_sub ? e_subs_ : e_fish_).push_back(enemy);
}

void Seaquest::spawn_diver(LegacyRandomState& rng) {
  const bool right = rng.rand() < 1.0 / 2;
  const int y = static_cast<int>(rng.randint(1, 9));
  divers_.push_back(Entity{right ? 0 : 9, y, right, kDiverMoveInterval, 0});
}

int Seaquest::surface() {
  surface_ = true;
  int reward = 0;
  if (diver_count_ == kMaxDivers) {
    diver_count_ = 0;
    reward = oxygen_ * 10 / kMaxOxygen;
  }
  oxygen_ = kMaxOxygen;
  diver_count_ -= 1;  // also after six: the package leaves -1
  if (ramping_ && (e_spawn_speed_ > 1 || move_speed_ > 2)) {
    if (move_speed_ > 2 && ramp_index_ % 2 == 1) move_speed_ -= 1;
    if (e_spawn_speed_ > 1) e_spawn_speed_ -= 1;
    ramp_index_ += 1;
  }
  return reward;
}

Outcome Seaquest::act(int action, LegacyRandomState& rng) {
  Outcome out;
  if (terminal_) {
    out.terminal = true;
    return out;
  }
  if (e_spawn_timer_ == 0) {
    spawn_enemy(rng);
    e_spawn_timer_ = e_spawn_speed_;
  }
  if (d_spawn_timer_ == 0) {
    spawn_diver(rng);
    d_spawn_timer_ = kDiverSpawnSpeed;
  }

  if (action == kFire && shot_timer_ == 0) {
    f_bullets_.push_back(Entity{sub_x_, sub_y_, sub_right_, 0, 0});
    shot_timer_ = kShotCoolDown;
  } else if (action == kLeft) {
    sub_x_ = std::max(0, sub_x_ - 1);
    sub_right_ = false;
  } else if (action == kRight) {
    sub_x_ = std::min(9, sub_x_ + 1);
    sub_right_ = true;
  } else if (action == kUp) {
    sub_y_ = std::max(0, sub_y_ - 1);
  } else if (action == kDown) {
    sub_y_ = std::min(8, sub_y_ + 1);
  }

  Objects objects;
  List f_bullets = objects.adopt(f_bullets_), e_bullets = objects.adopt(e_bullets_);
  List e_fish = objects.adopt(e_fish_), e_subs = objects.adopt(e_subs_);
  List divers = objects.adopt(divers_);
  auto at_player = [&](size_t object) {
    return objects[object].x == sub_x_ && objects[object].y == sub_y_;
  };

  // Player bullets: +1 for the first fish, else the first sub, on the bullet's new cell.
  for_reversed(f_bullets, [&](size_t bullet) {
    advance(objects[bullet]);
    if (off_grid(objects[bullet])) {
      objects.remove(f_bullets, bullet);
      return;
    }
    for (List* enemies : {&e_fish, &e_subs}) {
      if (const std::optional<size_t> hit = objects.first_on_cell(*enemies, bullet)) {
        objects.remove(*enemies, *hit);
        objects.remove(f_bullets, bullet);
        out.reward += 1;
        return;
      }
    }
  });

  auto pick_up = [&](size_t diver) {
    if (!at_player(diver) || diver_count_ >= kMaxDivers) return false;
    objects.remove(divers, diver);
    diver_count_ += 1;
    return true;
  };
  for_reversed(divers, [&](size_t diver) {
    if (pick_up(diver)) return;
    if (objects[diver].move_timer == 0) {
      objects[diver].move_timer = kDiverMoveInterval;
      advance(objects[diver]);
      if (off_grid(objects[diver])) {
        objects.remove(divers, diver);
      } else {
        pick_up(diver);
      }
    } else {
      objects[diver].move_timer -= 1;
    }
  });

  // Fish and subs alike: a collision before or after the move ends the game; one that moves
  // onto a player bullet is shot (+1, the first such bullet goes too).
  auto move_enemy = [&](List& enemies, size_t enemy) {
    if (at_player(enemy)) terminal_ = true;
    if (objects[enemy].move_timer != 0) {
      objects[enemy].move_timer -= 1;
      return;
    }
    objects[enemy].move_timer = move_speed_;
    advance(objects[enemy]);
    if (off_grid(objects[enemy])) {
      objects.remove(enemies, enemy);
    } else if (at_player(enemy)) {
      terminal_ = true;
    } else if (const std::optional<size_t> hit = objects.first_on_cell(f_bullets, enemy)) {
      objects.remove(enemies, enemy);
      objects.remove(f_bullets, *hit);
      out.reward += 1;
    }
  };
  for_reversed(e_subs, [&](size_t sub) {
    move_enemy(e_subs, sub);
    // A sub fires even when it has just left the grid or been shot.
    if (objects[sub].shot_timer == 0) {
      objects[sub].shot_timer = kEnemyShotInterval;
      const Entity shot{objects[sub].x, objects[sub].y, objects[sub].right, 0, 0};
      objects.append(e_bullets, shot);
    } else {
      objects[sub].shot_timer -= 1;
    }
  });

  for_reversed(e_bullets, [&](size_t bullet) {
    if (at_player(bullet)) terminal_ = true;
    advance(objects[bullet]);
    if (off_grid(objects[bullet])) {
      objects.remove(e_bullets, bullet);
    } else if (at_player(bullet)) {
      terminal_ = true;
    }
  });

  for_reversed(e_fish, [&](size_t fish) { move_enemy(e_fish, fish); });

  f_bullets_ = objects.values(f_bullets);
  e_bullets_ = objects.values(e_bullets);
  e_fish_ = objects.values(e_fish);
  e_subs_ = objects.values(e_subs);
  divers_ = objects.values(divers);

  e_spawn_timer_ -= e_spawn_timer_ > 0 ? 1 : 0;
  d_spawn_timer_ -= d_spawn_timer_ > 0 ? 1 : 0;
  shot_timer_ -= shot_timer_ > 0 ? 1 : 0;
  if (oxygen_ <= 0) terminal_ = true;
  if (sub_y_ > 0) {
    oxygen_ -= 1;
    surface_ = false;
  } else if (!surface_) {
    if (diver_count_ == 0) {
      terminal_ = true;
    } else {
      out.reward += surface();
    }
  }
  out.terminal = terminal_;
  return out;
}

void Seaquest::observe(uint8_t* obs) const {
  const int c = channels();
  set_cell(obs, c, sub_y_, sub_x_, kSubFront);
  set_cell(obs, c, sub_y_, sub_right_ ? sub_x_ - 1 : sub_x_ + 1, kSubBack);
  for (int col = 0; col < std::max(0, oxygen_) * 10 / kMaxOxygen; ++col) {
    set_cell(obs, c, 9, col, kOxygenGauge);
  }
  // state[9, 9 - diver_count:9]: empty when the count is below 0.
  for (int col = std::max(0, 9 - diver_count_); col < 9; ++col) set_cell(obs, c, 9, col, kDiverGauge);
  for (const Entity& b : f_bullets_) set_cell(obs, c, b.y, b.x, kFriendlyBullet);
  for (const Entity& b : e_bullets_) set_cell(obs, c, b.y, b.x, kEnemyBullet);
  auto with_trail = [&](const std::vector<Entity>& entities, int channel) {
    for (const Entity& e : entities) {
      set_cell(obs, c, e.y, e.x, channel);
      const int back_x = e.right != 0 ? e.x - 1 : e.x + 1;
      if (back_x >= 0 && back_x <= 9) set_cell(obs, c, e.y, back_x, kTrail);
    }
  };
  with_trail(e_fish_, kEnemyFish);
  with_trail(e_subs_, kEnemySub);
  with_trail(divers_, kDiver);
}

namespace {

// How one list's entities are saved: the fields after x, y, right and the rows they swim in.
struct ListLayout {
  const char* what;
  int width;  // 3: x, y, right; 4: + move timer; 5: + shot timer
  int lowest_row;
};
constexpr ListLayout kLayouts[kLists] = {{"player bullet", 3, 0},
                                         {"enemy bullet", 3, 1},
                                         {"fish", 4, 1},
                                         {"sub", 5, 1},
                                         {"diver", 4, 1}};

void save_list(const std::vector<Entity>& list, int width, std::vector<double>& out) {
  out.push_back(static_cast<double>(list.size()));
  for (const Entity& e : list) {
    const int values[5] = {e.x, e.y, e.right, e.move_timer, e.shot_timer};
    out.insert(out.end(), values, values + width);
  }
}

}  // namespace

void Seaquest::save(std::vector<double>& out) const {
  for (int v : {oxygen_, diver_count_, sub_x_, sub_y_, static_cast<int>(sub_right_), e_spawn_speed_,
                e_spawn_timer_, d_spawn_timer_, move_speed_, ramp_index_, shot_timer_,
                static_cast<int>(surface_), static_cast<int>(terminal_)}) {
    out.push_back(v);
  }
  const std::vector<Entity>* lists[kLists] = {&f_bullets_, &e_bullets_, &e_fish_, &e_subs_, &divers_};
  for (int i = 0; i < kLists; ++i) save_list(*lists[i], kLayouts[i].width, out);
}

void Seaquest::load(const double* in, size_t size, const std::string& env_id) {
  if (size < kScalars + kLists) require_state_size(size, kScalars + kLists, name(), env_id);
  Seaquest next(ramping_);
  next.oxygen_ = state_int(in[0], -1, kMaxOxygen, "oxygen", env_id);
  next.diver_count_ = state_int(in[1], kLowestDiverCount, kMaxDivers, "diver count", env_id);
  // Read before x: the sub's back cell (behind its front) must lie on the grid.
  next.sub_right_ = state_int(in[4], 0, 1, "sub facing right", env_id) == 1;
  next.sub_x_ = state_int(in[2], next.sub_right_ ? 1 : 0, next.sub_right_ ? 9 : 8, "sub x", env_id);
  next.sub_y_ = state_int(in[3], 0, 8, "sub y", env_id);
  next.e_spawn_speed_ = state_int(in[5], 1, kInitSpawnSpeed, "enemy spawn interval", env_id);
  next.e_spawn_timer_ = state_int(in[6], 0, kInitSpawnSpeed, "enemy spawn timer", env_id);
  next.d_spawn_timer_ = state_int(in[7], 0, kDiverSpawnSpeed, "diver spawn timer", env_id);
  next.move_speed_ = state_int(in[8], 2, kInitMoveInterval, "enemy move interval", env_id);
  next.ramp_index_ = state_int(in[9], 0, kMaxRampIndex, "ramp index", env_id);
  next.shot_timer_ = state_int(in[10], 0, kShotCoolDown, "shot timer", env_id);
  next.surface_ = state_int(in[11], 0, 1, "surfaced", env_id) == 1;
  next.terminal_ = state_int(in[12], 0, 1, "terminal", env_id) == 1;

  std::vector<Entity>* lists[kLists] = {&next.f_bullets_, &next.e_bullets_, &next.e_fish_,
                                        &next.e_subs_, &next.divers_};
  size_t at = kScalars;
  for (int i = 0; i < kLists; ++i) {
    const ListLayout& layout = kLayouts[i];
    // Room for this list's entities after its count, keeping one count for each later list.
    const size_t room = size - at - 1 - static_cast<size_t>(kLists - 1 - i);
    const std::string what = layout.what;
    const int count = state_int(in[at], 0, static_cast<int>(room / static_cast<size_t>(layout.width)),
                                (what + " count").c_str(), env_id);
    ++at;
    for (int k = 0; k < count; ++k, at += static_cast<size_t>(layout.width)) {
      Entity e;
      e.x = state_int(in[at], 0, 9, (what + " x").c_str(), env_id);
      e.y = state_int(in[at + 1], layout.lowest_row, 8, (what + " y").c_str(), env_id);
      e.right = state_int(in[at + 2], 0, 1, (what + " facing right").c_str(), env_id);
      if (layout.width > 3) {
        e.move_timer = state_int(in[at + 3], 0, kInitMoveInterval, (what + " move timer").c_str(), env_id);
      }
      if (layout.width > 4) {
        e.shot_timer = state_int(in[at + 4], 0, kEnemyShotInterval, (what + " shot timer").c_str(), env_id);
      }
      lists[i]->push_back(e);
    }
  }
  require_state_size(size, at, name(), env_id);
  *this = next;
}

}  // namespace moonseed::envs::minatar
