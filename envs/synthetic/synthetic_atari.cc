#include "envs/synthetic/synthetic_atari.h"

#include <algorithm>
#include <chrono>
#include <cstring>

namespace moonseed::envs {
namespace {

// The header's get_state() layout: 31 values, EpisodicEnv's at [0], [2], [3] and the last 8.
constexpr size_t kElapsedAt = 0, kLengthAt = 1, kPhaseAt = 2, kSeededAt = 3, kStateSize = 31;
constexpr int kRowBytes = SyntheticAtari::kWidth * SyntheticAtari::kChannels;

// Screen rows (the header draws the same map).
constexpr int kHudBottom = 18;
constexpr int kWallBottom = 26;
constexpr int kBrickRows = 6, kBrickHeight = 6, kBrickWidth = 8;
constexpr int kGroundTop = SyntheticAtari::kPlayfieldTop + SyntheticAtari::kPlayfieldHeight;  // 174
constexpr int kGroundBottom = 202;
constexpr int kBands = 4;
constexpr int kBandHeight = SyntheticAtari::kPlayfieldHeight / kBands;
static_assert(kWallBottom + kBrickRows * kBrickHeight == SyntheticAtari::kPlayfieldTop);
static_assert(kBands * kBandHeight == SyntheticAtari::kPlayfieldHeight);

// Largest positions inside the playfield.
constexpr int kPlayerMaxX = SyntheticAtari::kWidth - SyntheticAtari::kPlayerWidth;           // 152
constexpr int kPlayerMaxY = SyntheticAtari::kPlayfieldHeight - SyntheticAtari::kPlayerHeight;  // 102
constexpr int kTargetMaxX = SyntheticAtari::kWidth - SyntheticAtari::kTargetSize;            // 154
constexpr int kTargetMaxY = SyntheticAtari::kPlayfieldHeight - SyntheticAtari::kTargetSize;    // 106
constexpr int kEnemyMaxX = SyntheticAtari::kWidth - SyntheticAtari::kEnemySize;              // 152
constexpr int kEnemyMaxY = SyntheticAtari::kPlayfieldHeight - SyntheticAtari::kEnemySize;      // 104
constexpr int kEnemyMaxSpeed = 3;

// HUD: four score digits (a 3x5 font drawn at twice its size) and the steps-left bar.
constexpr int kDigits = 4, kDigitX = 8, kDigitY = 4, kDigitPitch = 8, kFontScale = 2;
constexpr int kBarX = 80, kBarY = 7, kBarWidth = 72, kBarHeight = 5;

struct Rgb {
  uint8_t r, g, b;
};

// Colours close to the NTSC palette of the Atari 2600.
constexpr Rgb kBlack{0, 0, 0};
constexpr Rgb kScoreColour{210, 164, 74};
constexpr Rgb kBarLeft{184, 70, 162};
constexpr Rgb kBarSpent{74, 74, 74};
constexpr Rgb kWall{142, 142, 142};
constexpr Rgb kBrickColours[kBrickRows] = {{200, 72, 72},  {198, 108, 58}, {180, 122, 48},
                                           {162, 162, 42}, {72, 160, 72},  {66, 72, 200}};
constexpr Rgb kBandColours[kBands] = {{0, 0, 68}, {0, 28, 92}, {24, 26, 120}, {40, 40, 140}};
constexpr Rgb kBottom{45, 50, 184};
constexpr Rgb kPlayerColour{252, 252, 84};
constexpr Rgb kTargetColour{92, 186, 92};
constexpr Rgb kEnemyColours[SyntheticAtari::kEnemies] = {{200, 72, 72}, {198, 89, 179}, {84, 138, 210}};

// Rows of the digits 0-9, three bits each, the leftmost pixel in the high bit.
constexpr uint8_t kFont[10][5] = {{7, 5, 5, 5, 7}, {2, 6, 2, 2, 7}, {7, 1, 7, 4, 7}, {7, 1, 7, 1, 7},
                                  {5, 5, 7, 1, 1}, {7, 4, 7, 1, 7}, {7, 4, 7, 5, 7}, {7, 1, 1, 1, 1},
                                  {7, 5, 7, 5, 7}, {7, 5, 7, 1, 7}};

// ALE's full action set: (dx, dy) in units of the player's speed, y growing downwards.
struct Move {
  int dx, dy;
};
constexpr Move kMoves[SyntheticAtari::kActions] = {
    {0, 0},  {0, 0},  {0, -1}, {1, 0},   {-1, 0}, {0, 1},  {1, -1}, {-1, -1}, {1, 1},
    {-1, 1}, {0, -2}, {2, 0},  {-2, 0},  {0, 2},  {2, -2}, {-2, -2}, {2, 2},  {-2, 2}};

// splitmix64's finalizer: a cheap hash whose every output bit depends on every input bit.
uint64_t mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

// An integer drawn uniformly from [0, n) with one Generator.random() draw.
int draw_below(Pcg64& rng, int n) {
  return std::min(static_cast<int>(rng.next_double() * n), n - 1);
}

// The bounce of a sprite moving `speed` pixels per step between 0 and `max`.
int triangle_wave(int64_t phase, int64_t speed, int64_t t, int max) {
  const int64_t p = (phase + speed * t) % (2 * max);
  return static_cast<int>(p <= max ? p : 2 * max - p);
}

void put(uint8_t* pixel, Rgb c) {
  pixel[0] = c.r;
  pixel[1] = c.g;
  pixel[2] = c.b;
}

// Screen coordinates; the rectangle must lie on the screen.
void fill_rect(uint8_t* obs, int x, int y, int w, int h, Rgb c) {
  if (w <= 0 || h <= 0) return;
  uint8_t* first = obs + y * kRowBytes + x * SyntheticAtari::kChannels;
  uint8_t* pixel = first;
  for (int col = 0; col < w; ++col, pixel += SyntheticAtari::kChannels) put(pixel, c);
  const size_t bytes = static_cast<size_t>(w) * SyntheticAtari::kChannels;
  for (int row = 1; row < h; ++row) std::memcpy(first + row * kRowBytes, first, bytes);
}

// Dims a colour by `amount` per channel, floored at 0.
Rgb shade(Rgb c, int amount) {
  return {static_cast<uint8_t>(std::max(0, c.r - amount)), static_cast<uint8_t>(std::max(0, c.g - amount)),
          static_cast<uint8_t>(std::max(0, c.b - amount))};
}

// The brick rows over the black mortar: each brick dimmed by up to 31, each of its pixels by
// up to 45 more (a grain of 16 levels: one hash per line of a brick, four bits per pixel).
// Both come from the texture seed, so the wall changes between episodes only.
void draw_bricks(uint8_t* obs, uint64_t texture_seed) {
  constexpr int kChannels = SyntheticAtari::kChannels;
  for (int row = 0; row < kBrickRows; ++row) {
    for (int col = 0; col < SyntheticAtari::kWidth / kBrickWidth; ++col) {
      const uint64_t brick = mix64(texture_seed ^ static_cast<uint64_t>(row * 64 + col + 1));
      const Rgb base = shade(kBrickColours[row], static_cast<int>(brick & 31));
      for (int y = 0; y < kBrickHeight - 1; ++y) {
        uint64_t grain = mix64(brick + static_cast<uint64_t>(y) + 1);
        uint8_t* pixel =
            obs + (kWallBottom + row * kBrickHeight + y) * kRowBytes + col * kBrickWidth * kChannels;
        for (int x = 0; x < kBrickWidth - 1; ++x, pixel += kChannels, grain >>= 4) {
          put(pixel, shade(base, static_cast<int>(grain & 15) * 3));
        }
      }
    }
  }
}

// The ground: a brown texture of one hash per pixel, scrolled left by one pixel per step.
void draw_ground(uint8_t* obs, uint64_t texture_seed, int64_t elapsed_steps) {
  for (int y = kGroundTop; y < kGroundBottom; ++y) {
    uint8_t* pixel = obs + y * kRowBytes;
    const uint64_t row_key = texture_seed + (static_cast<uint64_t>(y) << 40);
    for (int x = 0; x < SyntheticAtari::kWidth; ++x, pixel += SyntheticAtari::kChannels) {
      const uint64_t h = mix64(row_key + static_cast<uint64_t>(x + elapsed_steps));
      put(pixel, {static_cast<uint8_t>(96 + (h & 63)), static_cast<uint8_t>(64 + ((h >> 6) & 31)),
                  static_cast<uint8_t>(24 + ((h >> 11) & 15))});
    }
  }
}

EnvSpec synthetic_atari_spec(int step_us, int max_episode_steps) {
  require_option(SyntheticAtari::kId, "step_us", step_us, 0, SyntheticAtari::kMaxStepUs);
  const size_t size = static_cast<size_t>(SyntheticAtari::kHeight) * kRowBytes;
  Space frame;
  frame.kind = SpaceKind::kBox;
  frame.dtype = DType::kUInt8;
  frame.shape = {SyntheticAtari::kHeight, SyntheticAtari::kWidth, SyntheticAtari::kChannels};
  frame.low.assign(size, 0.f);
  frame.high.assign(size, 255.f);
  return {SyntheticAtari::kId, frame, discrete_space(SyntheticAtari::kActions), max_episode_steps};
}

int64_t steady_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

SyntheticAtari::SyntheticAtari(int step_us, int max_episode_steps)
    : EpisodicEnv(synthetic_atari_spec(step_us, max_episode_steps), {kStateSize, kElapsedAt, kPhaseAt, kSeededAt}),
      step_us_(step_us) {}

SyntheticAtari::Point SyntheticAtari::draw_target_position() {
  Point p;
  p.x = draw_below(rng(), kTargetMaxX + 1);
  p.y = draw_below(rng(), kTargetMaxY + 1);
  return p;
}

SyntheticAtari::Point SyntheticAtari::enemy_position(const Enemy& enemy) const {
  return {triangle_wave(enemy.phase_x, enemy.speed_x, elapsed_steps(), kEnemyMaxX),
          triangle_wave(enemy.phase_y, enemy.speed_y, elapsed_steps(), kEnemyMaxY)};
}

void SyntheticAtari::start_episode(void* obs) {
  episode_length_ = kMinEpisodeSteps + draw_below(rng(), kMaxEpisodeSteps - kMinEpisodeSteps + 1);
  player_.x = draw_below(rng(), kPlayerMaxX + 1);
  player_.y = draw_below(rng(), kPlayerMaxY + 1);
  target_ = draw_target_position();
  for (Enemy& enemy : enemies_) {
    enemy.phase_x = draw_below(rng(), 2 * kEnemyMaxX);
    enemy.phase_y = draw_below(rng(), 2 * kEnemyMaxY);
    enemy.speed_x = 1 + draw_below(rng(), kEnemyMaxSpeed);
    enemy.speed_y = 1 + draw_below(rng(), kEnemyMaxSpeed);
  }
  texture_seed_ = rng().next_uint64();
  score_ = 0;
  draw_frame(static_cast<uint8_t*>(obs));
}

StepResult SyntheticAtari::advance(const Action& action, void* obs) {
  const int64_t start_ns = steady_now_ns();
  StepResult result;
  const Move move = kMoves[action.index];
  player_.x = std::clamp(player_.x + move.dx * kPlayerSpeed, 0, kPlayerMaxX);
  player_.y = std::clamp(player_.y + move.dy * kPlayerSpeed, 0, kPlayerMaxY);
  const bool touches = player_.x < target_.x + kTargetSize && target_.x < player_.x + kPlayerWidth &&
                       player_.y < target_.y + kTargetSize && target_.y < player_.y + kPlayerHeight;
  if (touches) {
    result.reward = kTargetReward;
    ++score_;
    target_ = draw_target_position();
  }
  result.terminated = elapsed_steps() == episode_length_;
  draw_frame(static_cast<uint8_t*>(obs));
  if (step_us_ > 0) burn_until(start_ns + int64_t{step_us_} * 1000);
  return result;
}

void SyntheticAtari::draw_frame(uint8_t* obs) const {
  // Backgrounds, top to bottom; together they cover every row.
  fill_rect(obs, 0, 0, kWidth, kHudBottom, kBlack);
  fill_rect(obs, 0, kHudBottom, kWidth, kWallBottom - kHudBottom, kWall);
  fill_rect(obs, 0, kWallBottom, kWidth, kPlayfieldTop - kWallBottom, kBlack);  // mortar
  draw_bricks(obs, texture_seed_);
  for (int band = 0; band < kBands; ++band) {
    fill_rect(obs, 0, kPlayfieldTop + band * kBandHeight, kWidth, kBandHeight, kBandColours[band]);
  }
  draw_ground(obs, texture_seed_, elapsed_steps());
  fill_rect(obs, 0, kGroundBottom, kWidth, kHeight - kGroundBottom, kBottom);

  // HUD: the score (modulo 10^4: an episode scores at most kMaxEpisodeSteps) and the steps left.
  int64_t rest = score_;
  for (int d = kDigits - 1; d >= 0; --d, rest /= 10) {
    const uint8_t* glyph = kFont[rest % 10];
    for (int fy = 0; fy < 5; ++fy) {
      for (int fx = 0; fx < 3; ++fx) {
        if ((glyph[fy] >> (2 - fx)) & 1) {
          fill_rect(obs, kDigitX + d * kDigitPitch + fx * kFontScale, kDigitY + fy * kFontScale,
                    kFontScale, kFontScale, kScoreColour);
        }
      }
    }
  }
  const int left = static_cast<int>(kBarWidth * (episode_length_ - elapsed_steps()) / episode_length_);
  fill_rect(obs, kBarX, kBarY, left, kBarHeight, kBarLeft);
  fill_rect(obs, kBarX + left, kBarY, kBarWidth - left, kBarHeight, kBarSpent);

  // Sprites, the player last (on top).
  fill_rect(obs, target_.x, kPlayfieldTop + target_.y, kTargetSize, kTargetSize, kTargetColour);
  for (int i = 0; i < kEnemies; ++i) {
    const Point p = enemy_position(enemies_[static_cast<size_t>(i)]);
    fill_rect(obs, p.x, kPlayfieldTop + p.y, kEnemySize, kEnemySize, kEnemyColours[i]);
  }
  fill_rect(obs, player_.x, kPlayfieldTop + player_.y, kPlayerWidth, kPlayerHeight, kPlayerColour);
}

void SyntheticAtari::burn_until(int64_t deadline_ns) {
  uint64_t x = burn_sink_ | 1;
  do {
    // A few hundred nanoseconds of multiply-xorshift between clock reads.
    for (int i = 0; i < 64; ++i) {
      x = x * 6364136223846793005ULL + 1442695040888963407ULL;
      x ^= x >> 29;
    }
  } while (steady_now_ns() < deadline_ns);
  burn_sink_ = x;
}

void SyntheticAtari::save_state(double* state) const {
  state[kLengthAt] = static_cast<double>(episode_length_);
  state[4] = static_cast<double>(score_);
  state[5] = player_.x;
  state[6] = player_.y;
  state[7] = target_.x;
  state[8] = target_.y;
  for (size_t i = 0; i < enemies_.size(); ++i) {
    state[9 + 4 * i] = enemies_[i].phase_x;
    state[10 + 4 * i] = enemies_[i].phase_y;
    state[11 + 4 * i] = enemies_[i].speed_x;
    state[12 + 4 * i] = enemies_[i].speed_y;
  }
  state[21] = static_cast<double>(texture_seed_ >> 32);
  state[22] = static_cast<double>(texture_seed_ & 0xffffffffULL);
}

void SyntheticAtari::load_state(const double* state, const Episode& episode) {
  // A state word in [low, high].
  const auto in = [&](size_t i, int64_t low, int64_t high, const char* what) {
    return static_cast<int>(state_integer(state[i], low, high, what));
  };
  const int length = in(kLengthAt, kMinEpisodeSteps, kMaxEpisodeSteps, "episode length");
  require_reachable(episode, length);
  const int score = in(4, 0, episode.elapsed_steps, "score");
  const Point player{in(5, 0, kPlayerMaxX, "player x"), in(6, 0, kPlayerMaxY, "player y")};
  const Point target{in(7, 0, kTargetMaxX, "target x"), in(8, 0, kTargetMaxY, "target y")};
  std::array<Enemy, kEnemies> enemies;
  for (size_t i = 0; i < enemies.size(); ++i) {
    enemies[i].phase_x = in(9 + 4 * i, 0, 2 * kEnemyMaxX - 1, "enemy x phase");
    enemies[i].phase_y = in(10 + 4 * i, 0, 2 * kEnemyMaxY - 1, "enemy y phase");
    enemies[i].speed_x = in(11 + 4 * i, 1, kEnemyMaxSpeed, "enemy x speed");
    enemies[i].speed_y = in(12 + 4 * i, 1, kEnemyMaxSpeed, "enemy y speed");
  }
  const auto texture_high = static_cast<uint64_t>(state_integer(state[21], 0, 0xffffffffLL, "texture seed"));
  const auto texture_low = static_cast<uint64_t>(state_integer(state[22], 0, 0xffffffffLL, "texture seed"));

  episode_length_ = length;
  score_ = score;
  player_ = player;
  target_ = target;
  enemies_ = enemies;
  texture_seed_ = (texture_high << 32) | texture_low;
}

}  // namespace moonseed::envs
