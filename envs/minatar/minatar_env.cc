#include "envs/minatar/minatar_env.h"

#include <cmath>
#include <cstring>
#include <random>
#include <stdexcept>

#include "base/text.h"
#include "envs/canvas.h"
#include "envs/minatar/asterix.h"
#include "envs/minatar/breakout.h"
#include "envs/minatar/freeway.h"
#include "envs/minatar/seaquest.h"
#include "envs/minatar/space_invaders.h"
#include "envs/numpy_rng.h"

namespace moonseed::envs::minatar {
namespace {

// The id from the version asked for: Seaquest's minimal set has all six actions.
EnvSpec make_spec(const Game& game, bool minimal, size_t actions, int max_episode_steps) {
  EnvSpec spec;
  spec.id = std::string("MinAtar/") + game.name() + (minimal ? "-v1" : "-v0");
  spec.observation.kind = SpaceKind::kBox;
  spec.observation.dtype = DType::kUInt8;
  spec.observation.shape = {kSize, kSize, game.channels()};
  const size_t cells = static_cast<size_t>(kSize * kSize * game.channels());
  spec.observation.low.assign(cells, 0.f);
  spec.observation.high.assign(cells, 1.f);
  spec.action = discrete_space(static_cast<int64_t>(actions));
  spec.max_episode_steps = max_episode_steps;
  return spec;
}

std::vector<int> action_set(const Game& game, bool minimal) {
  if (minimal) return game.minimal_actions();
  std::vector<int> all;
  for (int a = 0; a < kFullActions; ++a) all.push_back(a);
  return all;
}

}  // namespace

int state_int(double value, int low, int high, const char* what, const std::string& env_id) {
  if (!(value >= low && value <= high && std::floor(value) == value)) {
    throw std::invalid_argument(env_id + " set_state: " + what + " = " + base::number_text(value) +
                                " is not an integer in [" + std::to_string(low) + ", " +
                                std::to_string(high) + "]");
  }
  return static_cast<int>(value);
}

void require_state_size(size_t size, size_t expected, const char* game, const std::string& env_id) {
  if (size != expected) {
    throw std::invalid_argument(env_id + " set_state: " + game + "'s state has " +
                                std::to_string(size) + " values, expected " +
                                std::to_string(expected));
  }
}

MinAtarEnv::MinAtarEnv(std::unique_ptr<Game> game, bool minimal_actions, double sticky_action_prob,
                       int max_episode_steps)
    : game_(std::move(game)),
      actions_(action_set(*game_, minimal_actions)),
      sticky_action_prob_(sticky_action_prob),
      spec_(make_spec(*game_, minimal_actions, actions_.size(), max_episode_steps)) {
  if (!(sticky_action_prob >= 0.0 && sticky_action_prob <= 1.0)) {
    throw std::invalid_argument(spec_.id + ": sticky_action_prob must be in [0, 1], got " +
                                base::number_text(sticky_action_prob));
  }
  if (max_episode_steps < 0) {
    throw std::invalid_argument(spec_.id + ": max_episode_steps must be >= 0, got " +
                                std::to_string(max_episode_steps));
  }
}

void MinAtarEnv::observe(void* obs) const {
  auto* bytes = static_cast<uint8_t*>(obs);
  std::memset(bytes, 0, static_cast<size_t>(spec_.observation.byte_size()));
  game_->observe(bytes);
}

std::array<uint8_t, 3> channel_colour(int channel) {
  // Ten distinct colours, repeating for games with more channels (Seaquest has 10).
  static constexpr std::array<std::array<uint8_t, 3>, 10> kPalette = {{{230, 25, 75},
                                                                      {60, 180, 75},
                                                                      {255, 225, 25},
                                                                      {0, 130, 200},
                                                                      {245, 130, 48},
                                                                      {145, 30, 180},
                                                                      {70, 240, 240},
                                                                      {240, 50, 230},
                                                                      {210, 245, 60},
                                                                      {250, 190, 212}}};
  return kPalette[static_cast<size_t>(channel) % kPalette.size()];
}

bool MinAtarEnv::render(Image& frame) const {
  std::vector<uint8_t> obs(static_cast<size_t>(spec_.observation.byte_size()));
  observe(obs.data());
  const int channels = game_->channels();
  const int side = kSize * kCellPixels;
  Canvas canvas(frame, side, side, {0, 0, 0});
  for (int row = 0; row < kSize; ++row) {
    for (int column = 0; column < kSize; ++column) {
      for (int channel = channels - 1; channel >= 0; --channel) {
        if (obs[static_cast<size_t>((row * kSize + column) * channels + channel)] == 0) continue;
        canvas.fill_rect(column * kCellPixels, row * kCellPixels, (column + 1) * kCellPixels,
                         (row + 1) * kCellPixels, channel_colour(channel));
        break;
      }
    }
  }
  return true;
}

void MinAtarEnv::reset(std::optional<uint64_t> seed, void* obs) {
  if (seed.has_value()) {
    rng_.seed_u64(*seed);
    seeded_ = true;
  } else if (!seeded_) {
    std::random_device entropy;
    rng_.seed_array({entropy(), entropy(), entropy(), entropy()});
    seeded_ = true;
  }
  game_->reset(rng_);
  phase_ = Phase::kRunning;
  elapsed_steps_ = 0;
  observe(obs);
}

StepResult MinAtarEnv::step(const void* action, void* obs) {
  if (phase_ != Phase::kRunning) {
    throw std::logic_error(spec_.id + ": step() " +
                           (phase_ == Phase::kNeverReset ? "before the first reset()"
                                                         : "after the episode ended; reset() first"));
  }
  int32_t index = 0;
  std::memcpy(&index, action, sizeof(index));
  if (index < 0 || static_cast<size_t>(index) >= actions_.size()) {
    throw std::invalid_argument(spec_.id + ": action " + std::to_string(index) +
                                " is outside [0, " + std::to_string(actions_.size()) + ")");
  }
  // Environment.act: the sticky draw comes first, whatever the probability.
  int chosen = actions_[static_cast<size_t>(index)];
  if (rng_.rand() < sticky_action_prob_) chosen = last_action_;
  last_action_ = chosen;
  const Outcome outcome = game_->act(chosen, rng_);
  ++elapsed_steps_;
  StepResult result;
  result.reward = static_cast<float>(outcome.reward);
  result.terminated = outcome.terminal;
  result.truncated = spec_.max_episode_steps > 0 && elapsed_steps_ >= spec_.max_episode_steps;
  if (result.terminated || result.truncated) phase_ = Phase::kOver;
  observe(obs);
  return result;
}

std::vector<double> MinAtarEnv::get_state() const {
  std::vector<double> state = {static_cast<double>(elapsed_steps_),
                               static_cast<double>(static_cast<int>(phase_)), seeded_ ? 1.0 : 0.0,
                               static_cast<double>(last_action_)};
  game_->save(state);
  const size_t generator_at = state.size();
  state.resize(generator_at + LegacyRandomState::kStateSize);
  rng_.get_words(state.data() + generator_at);
  return state;
}

void MinAtarEnv::set_state(const std::vector<double>& state) {
  const size_t fixed = kHeader + LegacyRandomState::kStateSize;
  if (state.size() < fixed) {
    throw std::invalid_argument(spec_.id + " set_state: " + std::to_string(state.size()) +
                                " values, expected at least " + std::to_string(fixed));
  }
  const int64_t limit = spec_.max_episode_steps > 0 ? spec_.max_episode_steps : (1LL << 53);
  const auto elapsed = static_cast<int64_t>(
      checked_state_word(state[0], static_cast<double>(limit), "elapsed steps", spec_.id));
  const int phase = state_int(state[1], 0, 2, "phase", spec_.id);
  const int seeded = state_int(state[2], 0, 1, "seeded", spec_.id);
  const int last_action = state_int(state[3], 0, kFullActions - 1, "previous action", spec_.id);
  if (phase == static_cast<int>(Phase::kRunning) && spec_.max_episode_steps > 0 &&
      elapsed >= spec_.max_episode_steps) {
    throw std::invalid_argument(spec_.id + " set_state: an episode still running at the time limit");
  }
  const size_t generator_at = state.size() - LegacyRandomState::kStateSize;
  LegacyRandomState rng;
  rng.load_words(state.data() + generator_at, spec_.id);
  game_->load(state.data() + kHeader, generator_at - kHeader, spec_.id);  // all or nothing
  rng_ = rng;
  elapsed_steps_ = elapsed;
  phase_ = static_cast<Phase>(phase);
  seeded_ = seeded == 1;
  last_action_ = last_action;
}

std::unique_ptr<Game> make_game(const std::string& name, bool difficulty_ramping) {
  if (name == "Asterix") return std::make_unique<Asterix>(difficulty_ramping);
  if (name == "Breakout") return std::make_unique<Breakout>();
  if (name == "Freeway") return std::make_unique<Freeway>();
  if (name == "Seaquest") return std::make_unique<Seaquest>(difficulty_ramping);
  if (name == "SpaceInvaders") return std::make_unique<SpaceInvaders>(difficulty_ramping);
  return nullptr;
}

std::vector<std::string> game_names() {
  return {"Asterix", "Breakout", "Freeway", "Seaquest", "SpaceInvaders"};
}

}  // namespace moonseed::envs::minatar
