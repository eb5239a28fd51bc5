// Runs the decoder fuzz target without libFuzzer: a corpus of valid frames of
// every message type (one-segment and many-segment), then a fixed number of
// seeded mutations of them. Deterministic; passes when nothing crashes or
// aborts. Usage: fuzz_decoder_smoke [mutations]
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "rpc/codec.h"
#include "tests/rpc/sample_messages.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

using Bytes = std::vector<uint8_t>;
using Random = std::mt19937_64;

size_t below(Random& random, size_t n) { return n == 0 ? 0 : random() % n; }

void put_u32(Bytes& bytes, size_t offset, uint32_t value) {
  if (offset + 4 <= bytes.size()) std::memcpy(bytes.data() + offset, &value, 4);
}

uint32_t get_u32(const Bytes& bytes, size_t offset) {
  uint32_t value = 0;
  if (offset + 4 <= bytes.size()) std::memcpy(&value, bytes.data() + offset, 4);
  return value;
}

void mutate_once(Bytes& bytes, Random& random) {
  switch (below(random, 7)) {
    case 0: {  // bit flips
      const size_t flips = 1 + below(random, 4);
      for (size_t i = 0; i < flips && !bytes.empty(); ++i) {
        bytes[below(random, bytes.size())] ^= static_cast<uint8_t>(1u << below(random, 8));
      }
      break;
    }
    case 1:  // truncation
      bytes.resize(below(random, bytes.size() + 1));
      break;
    case 2: {  // segment-table edit: count or one size, to edge values
      const uint32_t segments = get_u32(bytes, 0) + 1;
      const size_t field = below(random, 1 + std::min<size_t>(segments, 8));
      const size_t offset = field == 0 ? 0 : 4 * field;
      const uint32_t old = get_u32(bytes, offset);
      const uint32_t choices[] = {0, 1, 2, old - 1, old + 1, 511, 512, 0x7fffffffu, 0xffffffffu,
                                  static_cast<uint32_t>(random())};
      put_u32(bytes, offset, choices[below(random, std::size(choices))]);
      break;
    }
    case 3: {  // a Cap'n Proto pointer word: nudge its offset or replace it
      if (bytes.size() < 16) break;
      const size_t offset = 8 * (1 + below(random, bytes.size() / 8 - 1));
      uint64_t word;
      std::memcpy(&word, bytes.data() + offset, 8);
      word = below(random, 2) == 0 ? word + (uint64_t{below(random, 64)} << 2) - 128 : random();
      std::memcpy(bytes.data() + offset, &word, 8);
      break;
    }
    case 4: {  // random bytes overwritten
      const size_t n = 1 + below(random, 8);
      for (size_t i = 0; i < n && !bytes.empty(); ++i) {
        bytes[below(random, bytes.size())] = static_cast<uint8_t>(random());
      }
      break;
    }
    case 5: {  // a chunk duplicated elsewhere
      if (bytes.empty()) break;
      const size_t from = below(random, bytes.size());
      const size_t length = 1 + below(random, std::min<size_t>(64, bytes.size() - from));
      const Bytes chunk(bytes.begin() + from, bytes.begin() + from + length);
      bytes.insert(bytes.begin() + below(random, bytes.size() + 1), chunk.begin(), chunk.end());
      break;
    }
    default: {  // garbage appended
      const size_t n = 1 + below(random, 32);
      for (size_t i = 0; i < n; ++i) bytes.push_back(static_cast<uint8_t>(random()));
      break;
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  const long mutations = argc > 1 ? std::strtol(argv[1], nullptr, 10) : 20000;
  const std::vector<Bytes> frames = moonseed::rpc::testing::sample_frames();
  size_t accepted = 0;
  for (const Bytes& frame : frames) {
    LLVMFuzzerTestOneInput(frame.data(), frame.size());
  }
  Random random(0x6d6f6f6e73656564ull);  // fixed seed: every run tries the same inputs
  for (long i = 0; i < mutations; ++i) {
    Bytes bytes = frames[below(random, frames.size())];
    const size_t rounds = 1 + below(random, 3);
    for (size_t r = 0; r < rounds; ++r) mutate_once(bytes, random);
    LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
    const auto result = moonseed::rpc::decode(bytes.data(), bytes.size());
    if (!std::holds_alternative<moonseed::rpc::DecodeError>(result)) ++accepted;
  }
  std::printf("fuzz_decoder_smoke: %zu corpus inputs, %ld mutations (%zu still decoded)\n",
              frames.size(), mutations, accepted);
  return 0;
}
