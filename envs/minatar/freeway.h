// MinAtar Freeway: a chicken crosses ten lanes of traffic from the bottom row to the top
// (+1 per crossing, after which the cars get new speeds); a car that hits it sends it back to
// the bottom. It moves at most once every 3 frames. The episode ends after 2500 frames (the
// package's own limit, reported as terminated). Channels: chicken, car, then the trail of a
// car of speed 1..5 (speed k moves once every k + 1 frames). Minimal actions: noop, up, down.
// No difficulty ramp.
//
// Saved state (36 values): chicken row, move timer, frames left (the package's terminate
// timer), terminal (0/1), then for each of the 8 cars: x, row, countdown, signed speed.
#pragma once

#include <array>

#include "envs/minatar/game.h"

namespace moonseed::envs::minatar {

class Freeway final : public Game {
 public:
  static constexpr int kTimeLimit = 2500;
  static constexpr int kPlayerSpeed = 3;

  const char* name() const override { return "Freeway"; }
  int channels() const override { return 7; }
  std::vector<int> minimal_actions() const override { return {kNoop, kUp, kDown}; }
  void reset(LegacyRandomState& rng) override;
  Outcome act(int action, LegacyRandomState& rng) override;
  void observe(uint8_t* obs) const override;
  void save(std::vector<double>& out) const override;
  void load(const double* in, size_t size, const std::string& env_id) override;

 private:
  struct Car {
    int x = 0, row = 0, countdown = 0, speed = 0;  // speed: +right / -left, |speed| in 1..5
  };
  void randomize_cars(LegacyRandomState& rng, bool initialize);

  std::array<Car, 8> cars_{};
  int pos_ = 9, move_timer_ = kPlayerSpeed, terminate_timer_ = kTimeLimit;
  bool terminal_ = false;
};

}  // namespace moonseed::envs::minatar
