// NumPy's legacy generator, `np.random.RandomState` (MT19937), for the draws MinAtar makes:
// seeding from an integer or an array of words, rand(), and randint(low, high) with the
// masked rejection RandomState keeps for stream compatibility. Seeded alike, the numbers are
// NumPy's bit for bit.
//
// Seeding: RandomState(seed) for seed < 2^32 is MT19937's init_genrand(seed); NumPy refuses a
// larger integer, so `seed_u64` takes seeds of more than 32 bits as RandomState([low word,
// high word]) (init_by_array), which NumPy accepts and which no 32-bit seed collides with.
//
// Ownership and threads: a plain value, one thread at a time.
// Failure: load_words throws std::invalid_argument for a state get_words cannot have written.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace moonseed::envs {

class LegacyRandomState {
 public:
  static constexpr size_t kWords = 624;
  // What get_words writes: the 624 key words, then the position in [0, 624].
  static constexpr size_t kStateSize = kWords + 1;

  LegacyRandomState() { seed(5489); }

  // np.random.RandomState(seed) for 0 <= seed < 2^32.
  void seed(uint32_t seed);
  // np.random.RandomState(words): MT19937's init_by_array.
  void seed_array(const std::vector<uint32_t>& words);
  // seed(s) below 2^32, else seed_array({low word, high word}).
  void seed_u64(uint64_t seed);

  // One 32-bit output (what RandomState.randint(2**32) would draw).
  uint32_t next_uint32();
  // RandomState.rand(): 53 random bits from two outputs, in [0, 1).
  double rand();
  // RandomState.randint(low, high) for high > low and high - low <= 2^32: draws nothing when
  // high - low == 1, else outputs masked to the smallest 2^k - 1 >= high - 1 - low until one
  // fits.
  int64_t randint(int64_t low, int64_t high);

  // The state as integers that fit a double exactly (the 624 words, then the position).
  void get_words(double* out) const;
  // Loads what get_words wrote; `env_id` names the env in the error.
  void load_words(const double* in, const std::string& env_id);

 private:
  void regenerate();

  std::array<uint32_t, kWords> key_{};
  size_t pos_ = kWords;
};

}  // namespace moonseed::envs
