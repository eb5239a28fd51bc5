// LegacyRandomState against numpy.random.RandomState: fixed values printed by NumPy 1.24
// (the python3 -c lines above each test), and long streams against the NumPy installed here.
#include "envs/numpy_legacy_rng.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

namespace moonseed::envs {
namespace {

// np.random.RandomState(0).randint(0, 2**32, 4, dtype=np.uint64)
TEST(LegacyRandomState, OutputsAreNumpysMt19937) {
  LegacyRandomState rng;
  rng.seed(0);
  EXPECT_EQ(rng.next_uint32(), 2357136044u);
  EXPECT_EQ(rng.next_uint32(), 2546248239u);
  EXPECT_EQ(rng.next_uint32(), 3071714933u);
  EXPECT_EQ(rng.next_uint32(), 3626093760u);
}

// r = np.random.RandomState(5); r.rand(), r.rand()
TEST(LegacyRandomState, RandIsNumpysRand) {
  LegacyRandomState rng;
  rng.seed(5);
  EXPECT_EQ(rng.rand(), 0.22199317108973948);
  EXPECT_EQ(rng.rand(), 0.8707323061773764);
  rng.seed(4294967295u);
  EXPECT_EQ(rng.rand(), 0.0976320289940138);
}

// r = np.random.RandomState(5); [r.randint(1, 9) for _ in range(8)], r.randint(7),
// r.randint(1), r.randint(2)
TEST(LegacyRandomState, RandintMasksAndRejectsAsNumpyDoes) {
  LegacyRandomState rng;
  rng.seed(5);
  std::vector<int64_t> draws;
  for (int i = 0; i < 8; ++i) draws.push_back(rng.randint(1, 9));
  EXPECT_EQ(draws, (std::vector<int64_t>{4, 7, 8, 6, 7, 7, 1, 2}));
  EXPECT_EQ(rng.randint(0, 7), 0);
  EXPECT_EQ(rng.randint(0, 1), 0);  // a range of one value draws nothing
  EXPECT_EQ(rng.randint(0, 2), 0);
  EXPECT_THROW(rng.randint(3, 3), std::invalid_argument);
}

// r = np.random.RandomState([7, 1]); r.rand(), r.randint(1, 6, 8)
TEST(LegacyRandomState, SeedsAbove32BitsAreNumpysArraySeed) {
  LegacyRandomState rng;
  rng.seed_u64((1ULL << 32) + 7);
  EXPECT_EQ(rng.rand(), 0.22550888929893187);
  std::vector<int64_t> draws;
  for (int i = 0; i < 8; ++i) draws.push_back(rng.randint(1, 6));
  EXPECT_EQ(draws, (std::vector<int64_t>{1, 1, 4, 3, 5, 1, 2, 5}));
}

TEST(LegacyRandomState, StateWordsRoundTripAndBadOnesAreRejected) {
  LegacyRandomState rng;
  rng.seed(77);
  for (int i = 0; i < 1000; ++i) rng.next_uint32();  // mid-block position
  std::vector<double> words(LegacyRandomState::kStateSize);
  rng.get_words(words.data());
  LegacyRandomState copy;
  copy.load_words(words.data(), "test");
  for (int i = 0; i < 2000; ++i) ASSERT_EQ(copy.next_uint32(), rng.next_uint32());

  std::vector<double> bad = words;
  bad.back() = 625;  // position past the block
  EXPECT_THROW(copy.load_words(bad.data(), "test"), std::invalid_argument);
  bad = words;
  bad[3] = 0.5;
  EXPECT_THROW(copy.load_words(bad.data(), "test"), std::invalid_argument);
  std::vector<double> zeros(LegacyRandomState::kStateSize, 0.0);
  EXPECT_THROW(copy.load_words(zeros.data(), "test"), std::invalid_argument);
}

// The same streams from the NumPy on this machine, over many seeds and ranges.
TEST(LegacyRandomStateLive, LongStreamsEqualNumpys) {
  const char* python = "/usr/bin/python3";
  if (std::system((std::string(python) + " -c 'import numpy' >/dev/null 2>&1").c_str()) != 0) {
    GTEST_SKIP() << "no NumPy for " << python << " (apt-get install python3-numpy)";
  }
  const std::string script =
      "import numpy as np\n"
      "for seed in [0, 1, 123, 4294967295, 4294967296 + 9, 2**40 + 3]:\n"
      "    r = np.random.RandomState(seed if seed < 2**32 else [seed & 0xFFFFFFFF, seed >> 32])\n"
      "    for i in range(400):\n"
      "        high = 1 + (i * 7919) % 37\n"
      "        print(repr(r.rand()), int(r.randint(high)), int(r.randint(-3, high)))\n";
  FILE* pipe = popen((std::string(python) + " -c '" + script + "'").c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  int lines = 0;
  for (uint64_t seed : {0ULL, 1ULL, 123ULL, 4294967295ULL, 4294967296ULL + 9, (1ULL << 40) + 3}) {
    LegacyRandomState rng;
    rng.seed_u64(seed);
    for (int i = 0; i < 400; ++i) {
      double value = 0;
      long long a = 0, b = 0;
      ASSERT_EQ(std::fscanf(pipe, "%lf %lld %lld", &value, &a, &b), 3) << "seed " << seed;
      const int64_t high = 1 + (i * 7919) % 37;
      ASSERT_EQ(rng.rand(), value) << "seed " << seed << " draw " << i;
      ASSERT_EQ(rng.randint(0, high), a) << "seed " << seed << " draw " << i;
      ASSERT_EQ(rng.randint(-3, high), b) << "seed " << seed << " draw " << i;
      ++lines;
    }
  }
  EXPECT_EQ(pclose(pipe), 0);
  EXPECT_EQ(lines, 2400);
}

}  // namespace
}  // namespace moonseed::envs
