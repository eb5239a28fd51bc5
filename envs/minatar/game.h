// One MinAtar game's rules, as the `minatar` package (Young & Tian 2019, version 1.0.15) plays
// them. MinAtarEnv (minatar_env.h) wraps a Game with what every game shares: sticky actions,
// the action sets of -v0 and -v1, seeding, the time limit and get/set state.
//
// A Game draws every random number from the generator it is handed, in the package's order:
// the env seeds that one generator and draws the sticky-action number from it too, as the
// package's Environment.seed() does.
//
// Threads: one at a time (an Env's rule).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "envs/numpy_legacy_rng.h"

namespace moonseed::envs::minatar {

// The package's action_map: every game takes all six; each has a minimal set.
enum FullAction : int { kNoop = 0, kLeft = 1, kUp = 2, kRight = 3, kDown = 4, kFire = 5 };
inline constexpr int kFullActions = 6;
inline constexpr int kSize = 10;  // the grid is 10 x 10

struct Outcome {
  int reward = 0;
  bool terminal = false;
};

class Game {
 public:
  virtual ~Game() = default;

  // The package's class name in the Gymnasium id ("SpaceInvaders").
  virtual const char* name() const = 0;
  // Channels C of the [10, 10, C] observation.
  virtual int channels() const = 0;
  // Game.minimal_action_set(): FullAction values in the package's order.
  virtual std::vector<int> minimal_actions() const = 0;

  // Game.reset().
  virtual void reset(LegacyRandomState& rng) = 0;
  // Game.act(action) for a FullAction, never called after a terminal outcome.
  virtual Outcome act(int action, LegacyRandomState& rng) = 0;
  // Game.state(): sets the cells that are on in `obs`, which the caller zeroed
  // (100 * channels() bytes, index (row * 10 + column) * channels() + channel).
  virtual void observe(uint8_t* obs) const = 0;

  // Appends the game's state. Its size may vary (entity lists), and load() gets exactly the
  // values save() appended.
  virtual void save(std::vector<double>& out) const = 0;
  // Loads what save() wrote: checks every value first and throws std::invalid_argument
  // "<env_id> set_state: ..." for one it cannot have written, leaving the game unchanged.
  virtual void load(const double* in, size_t size, const std::string& env_id) = 0;
};

// Sets one cell of an observation.
inline void set_cell(uint8_t* obs, int channels, int row, int column, int channel) {
  obs[(row * kSize + column) * channels + channel] = 1;
}

// Reads a saved integer, checked to lie in [low, high]; throws std::invalid_argument
// "<env_id> set_state: <what> = <value> is not an integer in [low, high]".
int state_int(double value, int low, int high, const char* what, const std::string& env_id);
// Throws std::invalid_argument unless `size` == `expected`.
void require_state_size(size_t size, size_t expected, const char* game, const std::string& env_id);

}  // namespace moonseed::envs::minatar
