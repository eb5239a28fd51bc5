// MinAtar (Young & Tian 2019): miniature Asterix, Breakout, Freeway, Seaquest and
// SpaceInvaders on a 10 x 10 grid, step for step as the `minatar` package 1.0.15 plays them
// through its Gymnasium wrapper.
//
// Ids as the package registers them: MinAtar/<Game>-v0 (all 6 actions: noop, left, up, right,
// down, fire) and MinAtar/<Game>-v1 (the game's minimal action set, in the package's order).
// Observation: uint8 [10, 10, C] (row, column, channel), 0 or 1, C per game.
// Options: sticky_action_prob (default 0.1: with this probability the previous action is
// repeated instead of the chosen one), difficulty_ramping (1 = on, the default; 0 = off),
// max_episode_steps (default 0 = none; Freeway ends by itself after 2500 frames).
//
// Seeding as the package's Environment.seed(): reset(seed) seeds one numpy legacy generator
// (RandomState(seed); seeds of more than 32 bits as RandomState([low word, high word])) that
// the sticky-action draw and the game share; reset() without a seed continues it, and an env
// never seeded starts from OS entropy. As in the package, the previous action survives a
// reset: the first step of an episode may repeat the last action of the one before.
//
// get_state() layout: [elapsed steps, phase (0 never reset, 1 running, 2 over), seeded (0/1),
// previous action (0..5)], then the game's own values (Game::save; their number varies with
// its entities), then the generator last (625 values: LegacyRandomState::get_words).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "envs/env.h"
#include "envs/minatar/game.h"
#include "envs/numpy_legacy_rng.h"

namespace moonseed::envs::minatar {

inline constexpr double kDefaultStickyActionProb = 0.1;

// Rendering: pixels per grid cell side, and the colour a channel's cells are drawn in.
inline constexpr int kCellPixels = 16;
std::array<uint8_t, 3> channel_colour(int channel);

class MinAtarEnv final : public Env {
 public:
  // `minimal_actions` = the -v1 id. Throws std::invalid_argument for a sticky_action_prob
  // outside [0, 1] or a negative max_episode_steps.
  MinAtarEnv(std::unique_ptr<Game> game, bool minimal_actions, double sticky_action_prob,
             int max_episode_steps);

  const EnvSpec& spec() const override { return spec_; }
  void reset(std::optional<uint64_t> seed, void* obs) override;
  StepResult step(const void* action, void* obs) override;
  std::vector<double> get_state() const override;
  void set_state(const std::vector<double>& state) override;
  // The grid, each cell kCellPixels square: black where no channel is set, else the colour of
  // the highest channel set there (channel_colour).
  bool render(Image& frame) const override;

 private:
  void observe(void* obs) const;

  enum class Phase { kNeverReset = 0, kRunning = 1, kOver = 2 };
  static constexpr size_t kHeader = 4;  // elapsed, phase, seeded, previous action

  std::unique_ptr<Game> game_;
  std::vector<int> actions_;  // FullAction of each action index
  double sticky_action_prob_;
  EnvSpec spec_;
  LegacyRandomState rng_;
  bool seeded_ = false;
  Phase phase_ = Phase::kNeverReset;
  int64_t elapsed_steps_ = 0;
  int last_action_ = kNoop;
};

// The game of a MinAtar id's name part ("Breakout"), or nullptr for an unknown one;
// `difficulty_ramping` as the package's option (games without a ramp ignore it).
std::unique_ptr<Game> make_game(const std::string& name, bool difficulty_ramping);
// The names make_game knows, in id order.
std::vector<std::string> game_names();

}  // namespace moonseed::envs::minatar
