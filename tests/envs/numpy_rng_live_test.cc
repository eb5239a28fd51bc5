// Compares long streams against the NumPy installed on this machine, when there is one.
#include <gtest/gtest.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "envs/numpy_rng.h"

namespace moonseed::envs {
namespace {

constexpr const char* kPython = "/usr/bin/python3";

bool numpy_available() {
  const std::string command = std::string(kPython) + " -c \"import numpy\" >/dev/null 2>&1";
  return std::system(command.c_str()) == 0;
}

// Runs python and returns its stdout split in whitespace-separated tokens.
std::vector<std::string> run_python(const std::string& script, const std::string& args) {
  const std::string command = std::string(kPython) + " -c '" + script + "' " + args;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return {};
  std::vector<std::string> tokens;
  std::string token;
  for (int c = std::fgetc(pipe); c != EOF; c = std::fgetc(pipe)) {
    if (std::isspace(c)) {
      if (!token.empty()) tokens.push_back(token);
      token.clear();
    } else {
      token.push_back(static_cast<char>(c));
    }
  }
  if (!token.empty()) tokens.push_back(token);
  EXPECT_EQ(pclose(pipe), 0) << command;
  return tokens;
}

constexpr int kCount = 2000;

// For each seed: kCount raw outputs, then, from a fresh generator, kCount doubles of
// random() and kCount of uniform(-3.5, 2.25), doubles in hex so they compare exactly.
constexpr const char* kStreamScript = R"(
import sys
import numpy as np
n = int(sys.argv[1])
for seed in map(int, sys.argv[2:]):
    print(" ".join(str(v) for v in np.random.PCG64(np.random.SeedSequence(seed)).random_raw(n).tolist()))
    g = np.random.Generator(np.random.PCG64(np.random.SeedSequence(seed)))
    print(" ".join(float.hex(float(v)) for v in g.random(n)))
    print(" ".join(float.hex(float(v)) for v in g.uniform(-3.5, 2.25, n)))
)";

TEST(Pcg64Live, LongStreamsMatchTheInstalledNumpy) {
  if (!numpy_available()) GTEST_SKIP() << kPython << " with numpy is not installed";
  const std::vector<uint64_t> seeds = {0, 1, 42, 123456789, 4294967296ULL, 9223372036854775813ULL,
                                       18446744073709551615ULL};
  std::string args = std::to_string(kCount);
  for (uint64_t seed : seeds) args += " " + std::to_string(seed);
  const std::vector<std::string> tokens = run_python(kStreamScript, args);
  ASSERT_EQ(tokens.size(), seeds.size() * 3 * kCount);

  size_t next = 0;
  for (uint64_t seed : seeds) {
    Pcg64 raw(seed);
    for (int i = 0; i < kCount; ++i, ++next) {
      ASSERT_EQ(raw.next_uint64(), std::stoull(tokens[next])) << "seed " << seed << " raw " << i;
    }
    Pcg64 doubles(seed);
    for (int i = 0; i < kCount; ++i, ++next) {
      ASSERT_EQ(doubles.next_double(), std::strtod(tokens[next].c_str(), nullptr))
          << "seed " << seed << " random " << i;
    }
    for (int i = 0; i < kCount; ++i, ++next) {
      ASSERT_EQ(doubles.uniform(-3.5, 2.25), std::strtod(tokens[next].c_str(), nullptr))
          << "seed " << seed << " uniform " << i;
    }
  }
}

}  // namespace
}  // namespace moonseed::envs
