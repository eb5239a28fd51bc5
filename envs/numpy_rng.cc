#include "envs/numpy_rng.h"

#include <cmath>
#include <random>
#include <stdexcept>
#include <string>

namespace moonseed::envs {
namespace {

// The constants of NumPy's SeedSequence (bit_generator.pyx), all uint32 arithmetic.
constexpr uint32_t kInitA = 0x43b0d7e5u;
constexpr uint32_t kMultA = 0x931e8875u;
constexpr uint32_t kInitB = 0x8b51f9ddu;
constexpr uint32_t kMultB = 0x58f38dedu;
constexpr uint32_t kMixMultL = 0xca01f9ddu;
constexpr uint32_t kMixMultR = 0x4973f715u;
constexpr int kXShift = 16;

// Hashes one word with a multiplier that advances on every call.
uint32_t hash_mix(uint32_t value, uint32_t& hash_const) {
  value ^= hash_const;
  hash_const *= kMultA;
  value *= hash_const;
  value ^= value >> kXShift;
  return value;
}

uint32_t mix(uint32_t x, uint32_t y) {
  uint32_t result = kMixMultL * x - kMixMultR * y;
  result ^= result >> kXShift;
  return result;
}

}  // namespace

SeedSequence::SeedSequence(const std::vector<uint32_t>& entropy) {
  uint32_t hash_const = kInitA;
  const size_t pool_size = pool_.size();
  // Fill the pool from the first words (zeros past the end keep the hash running).
  for (size_t i = 0; i < pool_size; ++i) {
    pool_[i] = hash_mix(i < entropy.size() ? entropy[i] : 0u, hash_const);
  }
  // Every pool word influences every other, so late words reach early ones.
  for (size_t src = 0; src < pool_size; ++src) {
    for (size_t dst = 0; dst < pool_size; ++dst) {
      if (src != dst) pool_[dst] = mix(pool_[dst], hash_mix(pool_[src], hash_const));
    }
  }
  // Words beyond the pool size are folded into every pool word.
  for (size_t src = pool_size; src < entropy.size(); ++src) {
    for (size_t dst = 0; dst < pool_size; ++dst) {
      pool_[dst] = mix(pool_[dst], hash_mix(entropy[src], hash_const));
    }
  }
}

SeedSequence SeedSequence::from_integer(uint64_t seed) {
  std::vector<uint32_t> words{static_cast<uint32_t>(seed)};
  if (seed >> 32) words.push_back(static_cast<uint32_t>(seed >> 32));
  return SeedSequence(words);
}

std::vector<uint32_t> SeedSequence::generate_state(size_t n_words) const {
  std::vector<uint32_t> out(n_words);
  uint32_t hash_const = kInitB;
  for (size_t i = 0; i < n_words; ++i) {
    uint32_t value = pool_[i % pool_.size()];
    value ^= hash_const;
    hash_const *= kMultB;
    value *= hash_const;
    value ^= value >> kXShift;
    out[i] = value;
  }
  return out;
}

std::vector<uint64_t> SeedSequence::generate_state64(size_t n_words) const {
  const std::vector<uint32_t> words = generate_state(2 * n_words);
  std::vector<uint64_t> out(n_words);
  for (size_t i = 0; i < n_words; ++i) {
    out[i] = static_cast<uint64_t>(words[2 * i]) | (static_cast<uint64_t>(words[2 * i + 1]) << 32);
  }
  return out;
}

Pcg64::Pcg64(uint64_t seed) : Pcg64(SeedSequence::from_integer(seed)) {}

Pcg64::Pcg64(const SeedSequence& seeds) {
  // NumPy draws four uint64 words: (state high, state low, sequence high, sequence low),
  // then seeds as the PCG reference does: state 0, inc = 2*seq+1, step, add, step.
  const std::vector<uint64_t> w = seeds.generate_state64(4);
  const u128 init_state = (static_cast<u128>(w[0]) << 64) | w[1];
  const u128 init_seq = (static_cast<u128>(w[2]) << 64) | w[3];
  state_ = 0;
  inc_ = (init_seq << 1) | 1u;
  advance();
  state_ += init_state;
  advance();
}

uint64_t Pcg64::next_uint64() {
  advance();
  const uint64_t folded = static_cast<uint64_t>(state_ >> 64) ^ static_cast<uint64_t>(state_);
  const unsigned rot = static_cast<unsigned>(state_ >> 122);
  return (folded >> rot) | (folded << ((64u - rot) & 63u));
}

double Pcg64::next_double() {
  return static_cast<double>(next_uint64() >> 11) * (1.0 / 9007199254740992.0);
}

double Pcg64::uniform(double low, double high) {
  const double range = high - low;
  return low + range * next_double();
}

std::array<uint32_t, 8> Pcg64::words() const {
  std::array<uint32_t, 8> out{};
  for (int i = 0; i < 4; ++i) {
    out[i] = static_cast<uint32_t>(state_ >> (96 - 32 * i));
    out[4 + i] = static_cast<uint32_t>(inc_ >> (96 - 32 * i));
  }
  return out;
}

void Pcg64::set_words(const std::array<uint32_t, 8>& words) {
  u128 state = 0;
  u128 inc = 0;
  for (int i = 0; i < 4; ++i) {
    state = (state << 32) | words[i];
    inc = (inc << 32) | words[4 + i];
  }
  if ((inc & 1u) == 0) {
    throw std::invalid_argument("Pcg64::set_words: increment must be odd, lowest word is " +
                                std::to_string(words[7]));
  }
  state_ = state;
  inc_ = inc;
}

void reseed_on_reset(std::optional<uint64_t> seed, Pcg64& rng, bool& seeded) {
  if (seed) {
    rng = Pcg64(*seed);
  } else if (!seeded) {
    rng = pcg64_from_os_entropy();
  }
  seeded = true;
}

Pcg64 pcg64_from_os_entropy() {
  std::random_device device;
  std::vector<uint32_t> words;
  for (int i = 0; i < 4; ++i) words.push_back(static_cast<uint32_t>(device()));
  // NumPy coerces the 128-bit integer to words without leading zero words.
  while (words.size() > 1 && words.back() == 0) words.pop_back();
  return Pcg64(SeedSequence(words));
}

uint64_t checked_state_word(double value, double limit, const char* what, const std::string& env_id) {
  if (!(value >= 0.0 && value <= limit && std::floor(value) == value)) {
    throw std::invalid_argument(env_id + " set_state: " + what + " = " + std::to_string(value) +
                                " is not an integer in [0, " + std::to_string(limit) + "]");
  }
  return static_cast<uint64_t>(value);
}

void save_generator_words(const Pcg64& rng, double* out) {
  const std::array<uint32_t, 8> words = rng.words();
  for (size_t i = 0; i < words.size(); ++i) out[i] = static_cast<double>(words[i]);
}

Pcg64 load_generator_words(const double* in, const std::string& env_id) {
  std::array<uint32_t, 8> words{};
  for (size_t i = 0; i < words.size(); ++i) {
    words[i] = static_cast<uint32_t>(checked_state_word(in[i], 4294967295.0, "generator word", env_id));
  }
  Pcg64 rng{0};
  rng.set_words(words);  // throws for an even increment
  return rng;
}

}  // namespace moonseed::envs
