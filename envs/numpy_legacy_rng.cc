#include "envs/numpy_legacy_rng.h"

#include <algorithm>
#include <stdexcept>

#include "envs/numpy_rng.h"

namespace moonseed::envs {
namespace {

constexpr size_t kShift = 397;  // MT19937's M
constexpr uint32_t kMatrix = 0x9908b0dfU;
constexpr uint32_t kUpper = 0x80000000U;
constexpr uint32_t kLower = 0x7fffffffU;

// The smallest 2^k - 1 that is >= value.
uint64_t mask_for(uint64_t value) {
  uint64_t mask = value;
  for (int shift = 1; shift < 64; shift <<= 1) mask |= mask >> shift;
  return mask;
}

}  // namespace

void LegacyRandomState::seed(uint32_t seed) {
  key_[0] = seed;
  for (size_t i = 1; i < kWords; ++i) {
    const uint32_t prev = key_[i - 1];
    key_[i] = 1812433253U * (prev ^ (prev >> 30)) + static_cast<uint32_t>(i);
  }
  pos_ = kWords;
}

void LegacyRandomState::seed_array(const std::vector<uint32_t>& words) {
  seed(19650218U);
  if (words.empty()) return;
  size_t i = 1, j = 0;
  for (size_t k = std::max(kWords, words.size()); k > 0; --k) {
    const uint32_t prev = key_[i - 1];
    key_[i] = (key_[i] ^ ((prev ^ (prev >> 30)) * 1664525U)) + words[j] + static_cast<uint32_t>(j);
    ++i;
    ++j;
    if (i >= kWords) {
      key_[0] = key_[kWords - 1];
      i = 1;
    }
    if (j >= words.size()) j = 0;
  }
  for (size_t k = kWords - 1; k > 0; --k) {
    const uint32_t prev = key_[i - 1];
    key_[i] = (key_[i] ^ ((prev ^ (prev >> 30)) * 1566083941U)) - static_cast<uint32_t>(i);
    ++i;
    if (i >= kWords) {
      key_[0] = key_[kWords - 1];
      i = 1;
    }
  }
  key_[0] = kUpper;
  pos_ = kWords;
}

void LegacyRandomState::seed_u64(uint64_t seed_value) {
  if (seed_value <= 0xFFFFFFFFULL) {
    seed(static_cast<uint32_t>(seed_value));
  } else {
    seed_array({static_cast<uint32_t>(seed_value), static_cast<uint32_t>(seed_value >> 32)});
  }
}

void LegacyRandomState::regenerate() {
  for (size_t i = 0; i < kWords; ++i) {
    const uint32_t y = (key_[i] & kUpper) | (key_[(i + 1) % kWords] & kLower);
    key_[i] = key_[(i + kShift) % kWords] ^ (y >> 1) ^ ((y & 1U) != 0 ? kMatrix : 0U);
  }
  pos_ = 0;
}

uint32_t LegacyRandomState::next_uint32() {
  if (pos_ >= kWords) regenerate();
  uint32_t y = key_[pos_++];
  y ^= y >> 11;
  y ^= (y << 7) & 0x9d2c5680U;
  y ^= (y << 15) & 0xefc60000U;
  y ^= y >> 18;
  return y;
}

double LegacyRandomState::rand() {
  const uint32_t high = next_uint32() >> 5;
  const uint32_t low = next_uint32() >> 6;
  return (high * 67108864.0 + low) / 9007199254740992.0;
}

int64_t LegacyRandomState::randint(int64_t low, int64_t high) {
  if (!(high > low) || static_cast<uint64_t>(high - low) > (1ULL << 32)) {
    throw std::invalid_argument("LegacyRandomState::randint: needs low < high <= low + 2^32");
  }
  const uint64_t range = static_cast<uint64_t>(high - low) - 1;
  if (range == 0) return low;
  if (range == 0xFFFFFFFFULL) return low + next_uint32();
  const uint64_t mask = mask_for(range);
  uint64_t value = 0;
  do {
    value = next_uint32() & mask;
  } while (value > range);
  return low + static_cast<int64_t>(value);
}

void LegacyRandomState::get_words(double* out) const {
  for (size_t i = 0; i < kWords; ++i) out[i] = static_cast<double>(key_[i]);
  out[kWords] = static_cast<double>(pos_);
}

void LegacyRandomState::load_words(const double* in, const std::string& env_id) {
  std::array<uint32_t, kWords> key{};
  bool any = false;
  for (size_t i = 0; i < kWords; ++i) {
    key[i] = static_cast<uint32_t>(checked_state_word(in[i], 4294967295.0, "generator word", env_id));
    any = any || key[i] != 0;
  }
  const size_t pos = checked_state_word(in[kWords], static_cast<double>(kWords), "generator position",
                                        env_id);
  if (!any) {
    throw std::invalid_argument(env_id + " set_state: the generator's words are all zero, which " +
                                "MT19937 never reaches");
  }
  key_ = key;
  pos_ = pos;
}

}  // namespace moonseed::envs
