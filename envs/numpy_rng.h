// A generator that reproduces NumPy's `np.random.default_rng(seed)` stream bit for bit,
// so that `Env::reset(seed)` gives the initial states Gymnasium 1.x gives with
// `env.reset(seed=seed)` (Gymnasium seeds `Generator(PCG64(SeedSequence(seed)))`).
//
// Only what the environments use is provided: SeedSequence (entropy pool and
// generate_state), PCG64 (128-bit LCG, XSL-RR output) and the doubles that
// `Generator.random` / `Generator.uniform` draw.
//
// Ownership and threads: plain values, no shared state; one thread at a time per object.
// Failure: none at run time; `Pcg64::set_words` throws std::invalid_argument for an even
// increment (PCG64 requires an odd one).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace moonseed::envs {

// NumPy's SeedSequence without spawn keys: hashes the entropy words into a pool of four
// uint32 words and expands that pool into any number of output words.
class SeedSequence {
 public:
  // `entropy` as NumPy coerces a Python int: little-endian 32-bit words, [0] for zero.
  explicit SeedSequence(const std::vector<uint32_t>& entropy);
  // The words NumPy builds from a non-negative integer seed.
  static SeedSequence from_integer(uint64_t seed);

  // SeedSequence.generate_state(n_words, np.uint32).
  std::vector<uint32_t> generate_state(size_t n_words) const;
  // SeedSequence.generate_state(n_words, np.uint64): pairs of uint32 words, low word first.
  std::vector<uint64_t> generate_state64(size_t n_words) const;

  const std::array<uint32_t, 4>& pool() const { return pool_; }

 private:
  std::array<uint32_t, 4> pool_{};
};

// NumPy's PCG64 bit generator (not PCG64DXSM): state <- state * M + inc, output
// rotr64(hi ^ lo, state >> 122) of the advanced state.
class Pcg64 {
 public:
  // The state NumPy builds from `SeedSequence(seed)`; same as np.random.default_rng(seed).
  explicit Pcg64(uint64_t seed);
  explicit Pcg64(const SeedSequence& seeds);

  // PCG64.random_raw().
  uint64_t next_uint64();
  // Generator.random(): the top 53 bits scaled into [0, 1).
  double next_double();
  // Generator.uniform(low, high): low + (high - low) * next_double(), in that order.
  double uniform(double low, double high);

  // The full state as eight 32-bit words, most significant first:
  // state[127:96], ..., state[31:0], inc[127:96], ..., inc[31:0]. Words fit a double
  // exactly, which is how envs carry them in get_state().
  std::array<uint32_t, 8> words() const;
  void set_words(const std::array<uint32_t, 8>& words);

  // The same numbers NumPy reports in `bit_generator.state["state"]`, split in halves.
  uint64_t state_high() const { return static_cast<uint64_t>(state_ >> 64); }
  uint64_t state_low() const { return static_cast<uint64_t>(state_); }
  uint64_t inc_high() const { return static_cast<uint64_t>(inc_ >> 64); }
  uint64_t inc_low() const { return static_cast<uint64_t>(inc_); }

 private:
  using u128 = unsigned __int128;
  void advance() { state_ = state_ * kMultiplier + inc_; }

  static constexpr u128 kMultiplier =
      (static_cast<u128>(2549297995355413924ULL) << 64) + 4865540595714422341ULL;
  u128 state_ = 0;
  u128 inc_ = 1;
};

// A generator as numpy.random.default_rng() without a seed: SeedSequence(None)
// hashes 128 bits of OS entropy.
Pcg64 pcg64_from_os_entropy();

// Gymnasium's reset(seed) rule for an env's generator: a seed reseeds it;
// no seed continues it, or seeds it from OS entropy if it was never seeded.
// `seeded` says whether `rng` has been seeded, and is set.
void reseed_on_reset(std::optional<uint64_t> seed, Pcg64& rng, bool& seeded);

// Envs save their generator and bookkeeping in get_state() as doubles; set_state()
// takes each back with this: `value` must be an integer in [0, limit], else
// std::invalid_argument "ENV_ID set_state: WHAT = VALUE is not an integer in [0, LIMIT]".
uint64_t checked_state_word(double value, double limit, const char* what, const std::string& env_id);

// The generator as the 8 doubles of get_state() (Pcg64::words), and back: every
// word is checked with checked_state_word, and an invalid state throws
// std::invalid_argument before anything is returned.
void save_generator_words(const Pcg64& rng, double* out);
Pcg64 load_generator_words(const double* in, const std::string& env_id);

}  // namespace moonseed::envs
