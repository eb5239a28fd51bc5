#include "scripts/loader/sha256.h"

#include <cstdio>
#include <stdexcept>
#include <string>

#include <gtest/gtest.h>

#include "tests/scripts/loader_test_util.h"
#include "tests/scripts/temp_dir.h"

namespace moonseed::scripts {
namespace {

using testing::TempDir;
using testing::sha256sum_of;


// Bytes of every value, in an order that is not a plain counter.
std::string mixed_bytes(size_t size) {
  std::string bytes(size, '\0');
  uint32_t x = 12345;
  for (char& c : bytes) {
    x = x * 1103515245u + 12345u;
    c = static_cast<char>(x >> 23);
  }
  return bytes;
}

// FIPS 180-4 examples (NIST "SHA256.pdf", "SHA2_Additional.pdf").
TEST(Sha256, MatchesTheFipsOneBlockExample) {
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(Sha256, MatchesTheFipsTwoBlockExample) {
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST(Sha256, MatchesTheFips896BitExample) {
  EXPECT_EQ(sha256_hex("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnop"
                       "qrsmnopqrstnopqrstu"),
            "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
}

TEST(Sha256, MatchesTheFipsMillionLetterAExample) {
  EXPECT_EQ(sha256_hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, HashesTheEmptyMessage) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(Sha256, AgreesWithSha256sumOnRealFilesAroundTheBlockBoundaries) {
  TempDir dir;
  // 55 and 56 bytes: the last that fits its length in the final block, the first that does not.
  for (size_t size : {1u, 55u, 56u, 63u, 64u, 65u, 119u, 120u, 128u, 4099u}) {
    const std::string bytes = mixed_bytes(size);
    const std::string path = dir.write("bytes-" + std::to_string(size), bytes);
    EXPECT_EQ(sha256_hex(bytes), sha256sum_of(path)) << size << " bytes";
  }
}

TEST(Sha256, GivesTheSameDigestWhateverTheChunksOfUpdate) {
  const std::string bytes = mixed_bytes(1000);
  Sha256 chunked;
  size_t at = 0;
  for (size_t step : {1u, 63u, 2u, 64u, 130u, 7u}) {
    chunked.update(bytes.data() + at, step);
    at += step;
  }
  chunked.update(bytes.substr(at));
  EXPECT_EQ(to_hex(chunked.finish()), sha256_hex(bytes));
}

TEST(Sha256, RefusesUpdatesAfterTheDigestIsTaken) {
  Sha256 hasher;
  hasher.update("abc");
  hasher.finish();
  EXPECT_THROW(hasher.update("d"), std::logic_error);
  EXPECT_THROW(hasher.finish(), std::logic_error);
}

}  // namespace
}  // namespace moonseed::scripts
