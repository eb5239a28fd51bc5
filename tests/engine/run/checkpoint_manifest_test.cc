// Checkpoint manifests on real files: written, read back, and checked against
// files flipped, truncated, removed after the manifest sealed them, and a seal
// that cannot be written (a real file size limit, in a child process).
#include "engine/run/checkpoint_manifest.h"

#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace moonseed::engine {
namespace {

namespace fs = std::filesystem;

class CheckpointManifestTest : public ::testing::Test {
 protected:
  void SetUp() override { fs::create_directories(dir_); }
  void TearDown() override { fs::remove_all(dir_); }

  std::string path(const std::string& name) const { return dir_ + "/" + name; }
  void write(const std::string& name, const std::string& bytes) const {
    std::ofstream(path(name), std::ios::binary | std::ios::trunc) << bytes;
  }
  std::string read(const std::string& name) const {
    std::ifstream in(path(name), std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  // XORs one byte of a file in place, as a bit rot would.
  void flip(const std::string& name, size_t at, char mask) const {
    std::fstream f(path(name), std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(static_cast<std::streamoff>(at));
    char c = 0;
    f.get(c);
    f.seekp(static_cast<std::streamoff>(at));
    f.put(static_cast<char>(c ^ mask));
  }
  // A sealed checkpoint of two files.
  void sealed_checkpoint() const {
    write("ckpt-7.pt", std::string(3000, 'm') + "model");
    write("ckpt-7.pt.replay", std::string(5000, 'r') + "replay");
    seal_checkpoint(path("ckpt-7.pt"), {".replay"});
  }

  std::string dir_ = fs::temp_directory_path().string() + "/moonseed-manifest-" + std::to_string(::getpid()) + "-" +
                     ::testing::UnitTest::GetInstance()->current_test_info()->name();
};

TEST_F(CheckpointManifestTest, TheTextIsOneLineAFileAfterACommentAndReadsBack) {
  const std::vector<ManifestEntry> entries = {{"ckpt-1200.pt", 1843212, 0x5f0c2a91u},
                                              {"ckpt-1200.pt.replay", 52428800, 0x0b77e3d4u}};
  const std::string text = manifest_text(entries);
  EXPECT_EQ(text,
            "# moonseed checkpoint manifest 1: CRC-32C size name\n"
            "5f0c2a91 1843212 ckpt-1200.pt\n"
            "0b77e3d4 52428800 ckpt-1200.pt.replay\n");
  EXPECT_EQ(parse_manifest(text, "m.sum"), entries);
}

TEST_F(CheckpointManifestTest, AMalformedManifestIsRefusedNamingItsLine) {
  for (const std::string line : {"5f0c2a9 12 ckpt-1.pt", "5F0C2A91 12 ckpt-1.pt", "5f0c2a91 12", "5f0c2a91 x ckpt-1.pt",
                                 "5f0c2a91 12 ../ckpt-1.pt", "ckpt-1.pt"}) {
    try {
      parse_manifest("# comment\n" + line + "\n", "/runs/a/ckpt-1.pt.sum");
      ADD_FAILURE() << line;
    } catch (const std::runtime_error& e) {
      EXPECT_EQ(std::string(e.what()), "checkpoint manifest /runs/a/ckpt-1.pt.sum is corrupt: line 2 is not "
                                       "\"CRC-32C SIZE NAME\": " + line);
    }
  }
  EXPECT_THROW(parse_manifest("# nothing listed\n", "m.sum"), std::runtime_error);
}

TEST_F(CheckpointManifestTest, AFilesChecksumIsTheCrc32cOfItsBytes) {
  write("check", "123456789");  // the CRC-32C check value
  const ManifestEntry e = checksum_file(path("check"));
  EXPECT_EQ(e.name, "check");
  EXPECT_EQ(e.size, 9u);
  EXPECT_EQ(e.crc32c, 0xE3069283u);
  // Larger than one read block: the CRC goes on across blocks.
  write("large", std::string((3 << 20) + 17, 'z'));
  const ManifestEntry large = checksum_file(path("large"));
  EXPECT_EQ(large.size, (3u << 20) + 17);
  write("large", std::string((3 << 20) + 16, 'z') + "y");
  EXPECT_NE(checksum_file(path("large")).crc32c, large.crc32c);
  EXPECT_THROW(checksum_file(path("missing")), std::runtime_error);
}

TEST_F(CheckpointManifestTest, ASealedCheckpointVerifiesAndListsEachOfItsFiles) {
  sealed_checkpoint();
  EXPECT_FALSE(fs::exists(path("ckpt-7.pt.sum.partial")));
  const std::vector<ManifestEntry> listed = parse_manifest(read("ckpt-7.pt.sum"), "sum");
  EXPECT_EQ(listed, (std::vector<ManifestEntry>{checksum_file(path("ckpt-7.pt")),
                                                checksum_file(path("ckpt-7.pt.replay"))}));
  const CheckpointCheck check = verify_checkpoint(path("ckpt-7.pt"));
  EXPECT_TRUE(check.sealed);
  EXPECT_TRUE(check.good()) << check.damage;
}

TEST_F(CheckpointManifestTest, AFlippedByteIsACrcMismatchNamingTheFileBothCrcsAndTheSize) {
  sealed_checkpoint();
  const uint32_t recorded = checksum_file(path("ckpt-7.pt")).crc32c;
  flip("ckpt-7.pt", 1500, 0x40);
  char expected[512];
  std::snprintf(expected, sizeof expected, "CRC-32C mismatch in %s (file 0x%08x, recorded 0x%08x; 3005 bytes); "
                "it was damaged after it was written", path("ckpt-7.pt").c_str(),
                checksum_file(path("ckpt-7.pt")).crc32c, recorded);
  const CheckpointCheck check = verify_checkpoint(path("ckpt-7.pt"));
  EXPECT_TRUE(check.sealed);
  EXPECT_EQ(check.damage, expected);
}

TEST_F(CheckpointManifestTest, ADamagedCompanionFailsTheCheckpointButNotItsModelFileAlone) {
  sealed_checkpoint();
  flip("ckpt-7.pt.replay", 4000, 0x01);
  const CheckpointCheck check = verify_checkpoint(path("ckpt-7.pt"));
  EXPECT_EQ(check.damage.rfind("CRC-32C mismatch in " + path("ckpt-7.pt.replay") + " (file 0x", 0), 0u)
      << check.damage;
  // What export and eval read: the model file alone.
  EXPECT_TRUE(verify_checkpoint(path("ckpt-7.pt"), /*companions=*/false).good());
}

TEST_F(CheckpointManifestTest, ATruncatedOrMissingFileIsNamedWithItsSize) {
  sealed_checkpoint();
  fs::resize_file(path("ckpt-7.pt"), 1000);
  EXPECT_EQ(verify_checkpoint(path("ckpt-7.pt")).damage,
            path("ckpt-7.pt") + " is 1000 bytes, its manifest records 3005; it was truncated or overwritten after "
                                "it was written");
  sealed_checkpoint();
  fs::remove(path("ckpt-7.pt.replay"));
  EXPECT_EQ(verify_checkpoint(path("ckpt-7.pt")).damage,
            path("ckpt-7.pt.replay") + " is missing (its manifest " + path("ckpt-7.pt.sum") + " lists it)");
}

TEST_F(CheckpointManifestTest, AGarbledManifestIsDamageNotAnException) {
  sealed_checkpoint();
  write("ckpt-7.pt.sum", "garbage\n");
  const CheckpointCheck check = verify_checkpoint(path("ckpt-7.pt"));
  EXPECT_TRUE(check.sealed);
  EXPECT_NE(check.damage.find("is corrupt: line 1"), std::string::npos) << check.damage;
  // A manifest of another checkpoint does not vouch for this one.
  sealed_checkpoint();
  write("ckpt-8.pt", "other");
  fs::copy_file(path("ckpt-7.pt.sum"), path("ckpt-8.pt.sum"));
  EXPECT_EQ(verify_checkpoint(path("ckpt-8.pt")).damage,
            "its manifest " + path("ckpt-8.pt.sum") + " does not list ckpt-8.pt");
}

TEST_F(CheckpointManifestTest, WithoutAManifestACheckpointIsUnsealedAndNothingIsCompared) {
  write("ckpt-3.pt", "old build");
  const CheckpointCheck check = verify_checkpoint(path("ckpt-3.pt"));
  EXPECT_FALSE(check.sealed);
  EXPECT_TRUE(check.good());
}

TEST_F(CheckpointManifestTest, UnsealingRemovesTheManifestAndIsHarmlessWithoutOne) {
  sealed_checkpoint();
  unseal_checkpoint(path("ckpt-7.pt"));
  EXPECT_FALSE(fs::exists(path("ckpt-7.pt.sum")));
  EXPECT_NO_THROW(unseal_checkpoint(path("ckpt-7.pt")));
  EXPECT_FALSE(verify_checkpoint(path("ckpt-7.pt")).sealed);
}

// In a child: the limit would hit the test's own files too, its stderr
// included, so the child checks the message itself: 0 when the seal failed
// with it and left no file.
int seal_past_a_file_size_limit(const std::string& file) {
  ::signal(SIGXFSZ, SIG_IGN);  // past the limit, a write fails with EFBIG, as on a full disk
  const rlimit limit{16, RLIM_INFINITY};
  if (::setrlimit(RLIMIT_FSIZE, &limit) != 0) return 2;
  try {
    seal_checkpoint(file, {});
  } catch (const std::runtime_error& e) {
    if (std::string(e.what()) != "cannot write " + file + ".sum.partial: File too large") return 4;
    return fs::exists(file + ".sum") || fs::exists(file + ".sum.partial") ? 1 : 0;
  }
  return 3;
}

TEST_F(CheckpointManifestTest, ASealThatCannotBeWrittenLeavesNoManifest) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  write("ckpt-9.pt", "0123456789");
  EXPECT_EXIT(std::exit(seal_past_a_file_size_limit(path("ckpt-9.pt"))), ::testing::ExitedWithCode(0), "");
  EXPECT_FALSE(verify_checkpoint(path("ckpt-9.pt")).sealed);
}

}  // namespace
}  // namespace moonseed::engine
