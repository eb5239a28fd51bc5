// SyntheticAtari-v0: an env whose observations are Atari-sized RGB frames and whose steps cost
// what an Atari step costs, for measuring the engine (e.g. the experience log's throughput)
// where no emulator is installed. It is a benchmark load, not a learning benchmark.
//
// Observation: uint8 [210, 160, 3] (HWC, bounds [0, 255]), like ALE's RGB screen. Every call of
// reset() and step() writes the whole frame. Rows from the top:
//   [0, 18)    HUD: black, the episode's score in four digits and a bar of the steps left;
//   [18, 26)   a grey wall;
//   [26, 62)   six rows of bricks (Breakout colours), each brick's shade and grain drawn per
//              episode;
//   [62, 174)  the playfield: four horizontal colour bands, and on them the sprites: the
//              player (8x10), a target (6x6) and three enemies (8x8) that bounce off the
//              playfield's edges at 1 to 3 pixels per step, whatever the agent does;
//   [174, 202) textured ground: per-pixel colours from a hash of the episode's texture seed,
//              scrolling one pixel left per step;
//   [202, 210) a dark bottom strip.
// Most of the bytes lz4 cannot shrink are in the ground and the bricks' grain: measured with
// liblz4 1.9.4, LZ4_compress_default compresses a frame 3.90 to 3.98 times (mean 3.94; 8 seeds,
// 300 frames each of random play), close to the ~3.8 of real Atari frames (tests check
// [2.5, 8]). Rendering a frame takes about 20 us of one core of the development machine.
//
// Action: Discrete(18) in ALE's full action order (NOOP, FIRE, UP, RIGHT, LEFT, DOWN, UPRIGHT,
// UPLEFT, DOWNRIGHT, DOWNLEFT, then the eight directions with FIRE, UPFIRE to DOWNLEFTFIRE in
// the same order). A direction moves the player kPlayerSpeed pixels on each axis it names,
// twice that with FIRE, clamped to the playfield; NOOP and FIRE leave it in place.
// Reward: +1 on a step that ends with the player overlapping the target; the target then
// reappears at a position drawn from the generator (two draws). Every other step: 0.
// Termination: after the episode's length, drawn at reset uniformly from
// [kMinEpisodeSteps, kMaxEpisodeSteps]. max_episode_steps truncates (0, the default, means
// none).
//
// Step cost: after rendering, step() burns the CPU with integer arithmetic until `step_us`
// microseconds of steady clock have passed since it began (rendering included), as an
// emulator would: one agent step of ALE with frame skip 4 costs about 0.4-0.7 ms of one core,
// hence the default of 500. step_us = 0 renders only; reset() always renders only. The cost
// is a wall-clock floor: on a loaded machine a step takes at least step_us.
//
// Seeding, the time limit, the step checks and the state's bookkeeping are EpisodicEnv's.
// reset() draws, in
// this order: the episode length, the player's x and y, the target's x and y, for each enemy
// its x phase, y phase, x speed and y speed, then the 64-bit texture seed (next_uint64). Each
// draw but the last is low + floor(n * Generator.random()) for the n integers of its range:
// length [500, 1500], player x [0, 152] and y [0, 102], target x [0, 154] and y [0, 106], enemy
// x phase [0, 304), y phase [0, 208), speeds [1, 3]. Same seed and actions give the same
// frames, rewards and ends.
//
// get_state(), 31 values, positions in playfield pixels (x from the left edge, y from the
// playfield's top row 62). EpisodicEnv's bookkeeping is at [0], [2], [3] and [23..30], not
// after the env's values, so that states saved before the base keep loading:
//   [0] elapsed steps, [1] episode length, [2] phase (0 before the first reset, 1 in an
//   episode, 2 after it ended), [3] generator seeded (0/1), [4] score, [5] player x, [6] player
//   y, [7] target x, [8] target y, [9 + 4i .. 12 + 4i] enemy i's x phase, y phase, x speed,
//   y speed (i = 0, 1, 2), [21] texture seed bits 63..32, [22] bits 31..0, [23..30] the
//   generator (Pcg64::words).
// An enemy's x at step t is the triangle wave of (x phase + x speed * t) over [0, 152] (period
// 304); y likewise over [0, 104] (period 208).
//
// Errors: the constructor throws std::invalid_argument for step_us outside [0, kMaxStepUs] or
// a negative max_episode_steps; step() and set_state() fail as EpisodicEnv says. Not
// thread-safe: one thread at a time, as Env says.
#pragma once

#include <array>
#include <cstdint>

#include "envs/episodic_env.h"

namespace moonseed::envs {

class SyntheticAtari final : public EpisodicEnv {
 public:
  static constexpr const char* kId = "SyntheticAtari-v0";
  static constexpr int kHeight = 210;
  static constexpr int kWidth = 160;
  static constexpr int kChannels = 3;
  static constexpr int kActions = 18;
  static constexpr int kDefaultStepUs = 500;
  static constexpr int kMaxStepUs = 100000;
  static constexpr int kMinEpisodeSteps = 500;
  static constexpr int kMaxEpisodeSteps = 1500;
  static constexpr int kPlayfieldTop = 62;
  static constexpr int kPlayfieldHeight = 112;
  static constexpr int kPlayerWidth = 8, kPlayerHeight = 10;
  static constexpr int kTargetSize = 6;
  static constexpr int kEnemySize = 8;
  static constexpr int kEnemies = 3;
  static constexpr int kPlayerSpeed = 2;
  static constexpr float kTargetReward = 1.f;

  explicit SyntheticAtari(int step_us = kDefaultStepUs, int max_episode_steps = 0);

  int step_us() const { return step_us_; }

 private:
  struct Enemy {
    int phase_x = 0, phase_y = 0;
    int speed_x = 1, speed_y = 1;
  };

  struct Point {
    int x = 0, y = 0;
  };

  void start_episode(void* obs) override;
  StepResult advance(const Action& action, void* obs) override;
  void save_state(double* state) const override;
  void load_state(const double* state, const Episode& episode) override;

  // Draws the target's position (two generator draws).
  Point draw_target_position();
  Point enemy_position(const Enemy& enemy) const;
  // Writes the frame of the current state: every byte of `obs`.
  void draw_frame(uint8_t* obs) const;
  // Integer arithmetic until the steady clock reads `deadline_ns` (a time_since_epoch count).
  void burn_until(int64_t deadline_ns);

  int step_us_;
  int64_t episode_length_ = kMinEpisodeSteps;
  int64_t score_ = 0;
  Point player_;
  Point target_;
  std::array<Enemy, kEnemies> enemies_{};
  uint64_t texture_seed_ = 0;
  // The burn loop's result, kept so the compiler cannot drop the work; not part of the state.
  uint64_t burn_sink_ = 0;
};

}  // namespace moonseed::envs
