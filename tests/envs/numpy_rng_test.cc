#include "envs/numpy_rng.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace moonseed::envs {
namespace {

// Every expected number below was printed by NumPy 1.24 (python3-numpy, Debian 12); the
// command that printed it is written above it.

// python3 -c "import numpy as np; ss = np.random.SeedSequence(0);
//   print(ss.pool.tolist(), ss.generate_state(4).tolist())"
TEST(SeedSequence, PoolAndStateOfSeedZeroMatchNumpy) {
  const SeedSequence seeds = SeedSequence::from_integer(0);
  const std::array<uint32_t, 4> pool{4265667335u, 1328953910u, 1320288413u, 3365567143u};
  EXPECT_EQ(seeds.pool(), pool);
  const std::vector<uint32_t> state{2968811710u, 3677149159u, 745650761u, 2884920346u};
  EXPECT_EQ(seeds.generate_state(4), state);
}

// python3 -c "import numpy as np; print(np.random.SeedSequence(2**64 - 1).pool.tolist())"
TEST(SeedSequence, SeedWiderThan32BitsUsesTwoWords) {
  const std::array<uint32_t, 4> pool{4210289908u, 4195322160u, 3925383783u, 237228537u};
  EXPECT_EQ(SeedSequence::from_integer(~0ULL).pool(), pool);
}

TEST(SeedSequence, Uint64StateIsPairsOfUint32WordsLowFirst) {
  const SeedSequence seeds = SeedSequence::from_integer(9);
  const std::vector<uint32_t> words = seeds.generate_state(4);
  const std::vector<uint64_t> wide = seeds.generate_state64(2);
  EXPECT_EQ(wide[0], (uint64_t{words[1]} << 32) | words[0]);
  EXPECT_EQ(wide[1], (uint64_t{words[3]} << 32) | words[2]);
}

// python3 -c "import numpy as np; s = np.random.PCG64(0).state['state'];
//   print(hex(s['state']), hex(s['inc']))"
TEST(Pcg64, SeededStateMatchesNumpy) {
  const Pcg64 rng(0);
  EXPECT_EQ(rng.state_high(), 0x1aa1b5345996452dULL);
  EXPECT_EQ(rng.state_low(), 0x09585eb7a69561e3ULL);
  EXPECT_EQ(rng.inc_high(), 0x418ddadb3af71a82ULL);
  EXPECT_EQ(rng.inc_low(), 0x588133bc447873a9ULL);
}

// python3 -c "import numpy as np; print(np.random.PCG64(42).random_raw(3).tolist())"
TEST(Pcg64, RawOutputsMatchNumpy) {
  Pcg64 rng(42);
  EXPECT_EQ(rng.next_uint64(), 14276969152011380360ULL);
  EXPECT_EQ(rng.next_uint64(), 8095878257575067585ULL);
  EXPECT_EQ(rng.next_uint64(), 15838336090824644132ULL);
}

// python3 -c "import numpy as np;
//   print([float.hex(v) for v in np.random.default_rng(7).random(3)])"
TEST(Pcg64, DoublesMatchNumpyGeneratorRandom) {
  Pcg64 rng(7);
  EXPECT_EQ(rng.next_double(), 0x1.400c8353e3ca9p-1);
  EXPECT_EQ(rng.next_double(), 0x1.cb5f9b795e4cdp-1);
  EXPECT_EQ(rng.next_double(), 0x1.8d26acbf2815fp-1);
}

// python3 -c "import numpy as np; print(['%.9g' % v for v in
//   np.random.default_rng(123).uniform(-0.05, 0.05, 8).astype(np.float32)])"
TEST(Pcg64, UniformMatchesNumpyGeneratorUniform) {
  Pcg64 rng(123);
  const float expected[8] = {0.0182351861f,  -0.0446178988f, -0.0279640127f, -0.0315628201f,
                             -0.0324094109f, 0.0312094502f,  0.0423345007f,  -0.0223425608f};
  for (float value : expected) EXPECT_EQ(static_cast<float>(rng.uniform(-0.05, 0.05)), value);
}

TEST(Pcg64, WordsRoundTripContinuesTheSameStream) {
  Pcg64 rng(5);
  rng.next_uint64();
  Pcg64 copy(99);
  copy.set_words(rng.words());
  for (int i = 0; i < 100; ++i) EXPECT_EQ(copy.next_uint64(), rng.next_uint64());
}

TEST(Pcg64, EvenIncrementIsRejected) {
  Pcg64 rng(5);
  std::array<uint32_t, 8> words = rng.words();
  words[7] &= ~1u;
  EXPECT_THROW(rng.set_words(words), std::invalid_argument);
}

}  // namespace
}  // namespace moonseed::envs
