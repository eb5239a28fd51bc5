// The classic control envs' pictures (Env::render), drawn the way Gymnasium's own
// renderers lay them out (sizes, scales, where things sit), with envs/canvas.h.
#include <cmath>

#include "envs/canvas.h"
#include "envs/classic/acrobot.h"
#include "envs/classic/cartpole.h"
#include "envs/classic/mountain_car.h"
#include "envs/classic/mountain_car_continuous.h"
#include "envs/classic/pendulum.h"

namespace moonseed::envs {
namespace {

constexpr Rgb kWhite = {255, 255, 255};
constexpr Rgb kBlack = {0, 0, 0};
constexpr Rgb kWood = {202, 152, 101};   // CartPole's pole
constexpr Rgb kAxle = {129, 132, 203};   // joints and axles
constexpr Rgb kLink = {0, 204, 204};     // Acrobot's links
constexpr Rgb kRod = {204, 77, 77};      // Pendulum's rod
constexpr Rgb kFlag = {204, 204, 0};     // MountainCar's goal flag

}  // namespace

// The cart at x (2.4 m either side of the middle fills the width) on a track 100 px above the
// bottom; the pole, 1 m long, leans right for theta > 0.
bool CartPole::render(Image& frame) const {
  constexpr int kWidth = 600, kHeight = 400;
  constexpr double kScale = kWidth / (2 * 2.4);
  constexpr double kTrackY = kHeight - 100;
  Canvas canvas(frame, kWidth, kHeight, kWhite);
  canvas.line({0, kTrackY}, {kWidth, kTrackY}, 1, kBlack);
  const double cart_x = x_ * kScale + kWidth / 2.0;
  canvas.fill_rect(cart_x - 25, kTrackY - 15, cart_x + 25, kTrackY + 15, kBlack);
  const Point axle{cart_x, kTrackY - 7.5};
  const double pole = 1.0 * kScale;
  canvas.line(axle, {axle.x + pole * std::sin(theta_), axle.y - pole * std::cos(theta_)}, 10, kWood);
  canvas.fill_circle(axle, 5, kAxle);
  return true;
}

// Two 1 m links hanging from the centre (theta1 = theta2 = 0: straight down), the goal line
// 1 m above the pivot.
bool Acrobot::render(Image& frame) const {
  constexpr int kSize = 500;
  constexpr double kScale = kSize / (2 * 2.2);
  constexpr Point kPivot{kSize / 2.0, kSize / 2.0};
  Canvas canvas(frame, kSize, kSize, kWhite);
  canvas.line({0, kPivot.y - kScale}, {kSize, kPivot.y - kScale}, 1, kBlack);
  const Point elbow{kPivot.x + kScale * std::sin(state_[0]), kPivot.y + kScale * std::cos(state_[0])};
  const double both = state_[0] + state_[1];
  const Point tip{elbow.x + kScale * std::sin(both), elbow.y + kScale * std::cos(both)};
  canvas.line(kPivot, elbow, 10, kLink);
  canvas.line(elbow, tip, 10, kLink);
  canvas.fill_circle(kPivot, 5, kAxle);
  canvas.fill_circle(elbow, 5, kAxle);
  return true;
}

// The rod from the centre, upright at th = 0, turning counter-clockwise as th grows.
bool Pendulum::render(Image& frame) const {
  constexpr int kSize = 500;
  constexpr double kScale = kSize / 4.4;
  constexpr Point kPivot{kSize / 2.0, kSize / 2.0};
  Canvas canvas(frame, kSize, kSize, kWhite);
  const Point tip{kPivot.x - kScale * std::sin(th_), kPivot.y - kScale * std::cos(th_)};
  canvas.line(kPivot, tip, 0.2 * kScale, kRod);
  canvas.fill_circle(tip, 0.1 * kScale, kRod);
  canvas.fill_circle(kPivot, 0.05 * kScale, kBlack);
  return true;
}

namespace {

// Both mountain cars: the hill y = 0.45 sin(3 x) + 0.55 over x in [-1.2, 0.6], the car a disc
// on it at `position`, the goal flag at `goal`.
void draw_mountain_car(Image& frame, double position, double goal) {
  constexpr int kWidth = 600, kHeight = 400;
  constexpr double kMin = -1.2, kMax = 0.6;
  constexpr double kScale = kWidth / (kMax - kMin);
  const auto at = [&](double x) {
    return Point{(x - kMin) * kScale, kHeight - 20 - (0.45 * std::sin(3 * x) + 0.55) * kScale};
  };
  Canvas canvas(frame, kWidth, kHeight, kWhite);
  constexpr int kPieces = 100;
  for (int i = 0; i < kPieces; ++i) {
    canvas.line(at(kMin + (kMax - kMin) * i / kPieces), at(kMin + (kMax - kMin) * (i + 1) / kPieces), 2, kBlack);
  }
  const Point flag = at(goal);
  canvas.line(flag, {flag.x, flag.y - 50}, 2, kBlack);
  canvas.fill_polygon({{flag.x, flag.y - 50}, {flag.x, flag.y - 40}, {flag.x + 25, flag.y - 45}}, kFlag);
  const Point car = at(position);
  canvas.fill_circle({car.x, car.y - 12}, 12, kBlack);
}

}  // namespace

// The goal flag at x = 0.5, where the episode ends.
bool MountainCar::render(Image& frame) const {
  draw_mountain_car(frame, position_, 0.5);
  return true;
}

// The same picture, the flag at x = 0.45, this env's goal (as Gymnasium draws it).
bool MountainCarContinuous::render(Image& frame) const {
  draw_mountain_car(frame, position_, 0.45);
  return true;
}

}  // namespace moonseed::envs
