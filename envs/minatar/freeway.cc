#include "envs/minatar/freeway.h"

#include <algorithm>
#include <cstdlib>

namespace moonseed::envs::minatar {
namespace {

enum Channel { kChicken = 0, kCar = 1, kSpeed1 = 2 };
constexpr size_t kScalars = 4;
constexpr int kChickenColumn = 4;

}  // namespace

void Freeway::randomize_cars(LegacyRandomState& rng, bool initialize) {
  // randint(1, 6, 8), then the signs of rand(8) - 0.5: all speeds are drawn before the signs.
  std::array<int, 8> speeds{};
  for (int& s : speeds) s = static_cast<int>(rng.randint(1, 6));
  for (int& s : speeds) {
    const double u = rng.rand() - 0.5;
    s *= u > 0 ? 1 : (u < 0 ? -1 : 0);
  }
  for (size_t i = 0; i < cars_.size(); ++i) {
    if (initialize) {
      cars_[i].x = 0;
      cars_[i].row = static_cast<int>(i) + 1;
    }
    cars_[i].countdown = std::abs(speeds[i]);
    cars_[i].speed = speeds[i];
  }
}

void Freeway::reset(LegacyRandomState& rng) {
  randomize_cars(rng, true);
  pos_ = 9;
  move_timer_ = kPlayerSpeed;
  terminate_timer_ = kTimeLimit;
  terminal_ = false;
}

Outcome Freeway::act(int action, LegacyRandomState& rng) {
  Outcome out;
  if (action == kUp && move_timer_ == 0) {
    move_timer_ = kPlayerSpeed;
    pos_ = std::max(0, pos_ - 1);
  } else if (action == kDown && move_timer_ == 0) {
    move_timer_ = kPlayerSpeed;
    pos_ = std::min(9, pos_ + 1);
  }
  if (pos_ == 0) {
    out.reward += 1;
    randomize_cars(rng, false);
    pos_ = 9;
  }
  for (Car& car : cars_) {
    if (car.x == kChickenColumn && car.row == pos_) pos_ = 9;
    if (car.countdown == 0) {
      car.countdown = std::abs(car.speed);
      car.x += car.speed > 0 ? 1 : -1;
      if (car.x < 0) car.x = 9;
      if (car.x > 9) car.x = 0;
      if (car.x == kChickenColumn && car.row == pos_) pos_ = 9;
    } else {
      car.countdown -= 1;
    }
  }
  if (move_timer_ > 0) move_timer_ -= 1;
  terminate_timer_ -= 1;
  if (terminate_timer_ < 0) terminal_ = true;
  out.terminal = terminal_;
  return out;
}

void Freeway::observe(uint8_t* obs) const {
  const int c = channels();
  set_cell(obs, c, pos_, kChickenColumn, kChicken);
  for (const Car& car : cars_) {
    set_cell(obs, c, car.row, car.x, kCar);
    int back_x = car.speed > 0 ? car.x - 1 : car.x + 1;
    if (back_x < 0) back_x = 9;
    if (back_x > 9) back_x = 0;
    // A speed of 0 (rand() returning exactly 0.5, odds 2^-53) has no trail channel.
    const int speed = std::abs(car.speed);
    if (speed >= 1 && speed <= 5) set_cell(obs, c, car.row, back_x, kSpeed1 + speed - 1);
  }
}

void Freeway::save(std::vector<double>& out) const {
  for (int v : {pos_, move_timer_, terminate_timer_, static_cast<int>(terminal_)}) out.push_back(v);
  for (const Car& car : cars_) {
    for (int v : {car.x, car.row, car.countdown, car.speed}) out.push_back(v);
  }
}

void Freeway::load(const double* in, size_t size, const std::string& env_id) {
  require_state_size(size, kScalars + 4 * cars_.size(), name(), env_id);
  Freeway next;
  next.pos_ = state_int(in[0], 0, 9, "chicken row", env_id);
  next.move_timer_ = state_int(in[1], 0, kPlayerSpeed, "move timer", env_id);
  next.terminate_timer_ = state_int(in[2], -1, kTimeLimit, "frames left", env_id);
  next.terminal_ = state_int(in[3], 0, 1, "terminal", env_id) == 1;
  for (size_t i = 0; i < cars_.size(); ++i) {
    const double* car = in + kScalars + 4 * i;
    next.cars_[i].x = state_int(car[0], 0, 9, "car x", env_id);
    next.cars_[i].row = state_int(car[1], 1, 8, "car row", env_id);
    next.cars_[i].speed = state_int(car[3], -5, 5, "car speed", env_id);
    next.cars_[i].countdown =
        state_int(car[2], 0, std::abs(next.cars_[i].speed), "car countdown", env_id);
  }
  *this = next;
}

}  // namespace moonseed::envs::minatar
