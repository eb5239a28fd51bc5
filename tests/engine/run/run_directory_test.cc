// The checkpoints of a run directory: which one --resume takes, and what
// interrupted saves leave behind, on real files.
#include "engine/run/run_directory.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace moonseed::engine {
namespace {

namespace fs = std::filesystem;

class RunDirectoryTest : public ::testing::Test {
 protected:
  void TearDown() override { fs::remove_all(runs_); }

  void touch(const std::string& name) const { std::ofstream(dir_.checkpoints_dir() + "/" + name) << "x"; }
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(dir_.checkpoints_dir())) out.push_back(e.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
  }
  std::string path(const std::string& name) const { return dir_.checkpoints_dir() + "/" + name; }

  std::string runs_ = fs::temp_directory_path().string() + "/moonseed-run-directory-" + std::to_string(::getpid()) +
                      "-" + ::testing::UnitTest::GetInstance()->current_test_info()->name();
  RunDirectory dir_ = RunDirectory::create(runs_, "test");
};

TEST_F(RunDirectoryTest, TheNewestCheckpointIsTheNewestThatHasEveryCompanion) {
  for (const char* name : {"ckpt-10.pt", "ckpt-10.pt.replay", "ckpt-20.pt", "ckpt-20.pt.replay", "ckpt-30.pt"}) {
    touch(name);
  }
  EXPECT_EQ(dir_.newest_checkpoint({".replay"}), path("ckpt-20.pt"));
  EXPECT_EQ(dir_.newest_checkpoint(), path("ckpt-30.pt"));
  EXPECT_EQ(dir_.newest_checkpoint({".replay", ".other"}), "");
}

TEST_F(RunDirectoryTest, ThereIsNoNewestCheckpointInAnEmptyDirectory) {
  EXPECT_EQ(dir_.newest_checkpoint(), "");
  EXPECT_EQ(dir_.newest_checkpoint({".replay"}), "");
}

TEST_F(RunDirectoryTest, PartialFilesAndCompanionsWithoutTheirCheckpointAreRemovedAndNamed) {
  for (const char* name : {"ckpt-10.pt", "ckpt-10.pt.replay", "ckpt-20.pt.partial", "ckpt-20.pt.replay",
                           "ckpt-30.pt.replay.partial", "ckpt-40.pt.partial", "notes.txt"}) {
    touch(name);
  }
  EXPECT_EQ(dir_.remove_unfinished_checkpoint_files(),
            (std::vector<std::string>{"ckpt-20.pt.partial", "ckpt-20.pt.replay", "ckpt-30.pt.replay.partial",
                                      "ckpt-40.pt.partial"}));
  EXPECT_EQ(names(), (std::vector<std::string>{"ckpt-10.pt", "ckpt-10.pt.replay", "notes.txt"}));
  EXPECT_TRUE(dir_.remove_unfinished_checkpoint_files().empty());
}

// Manifests (.sum) included: pruned with their checkpoints, removed without them.
TEST_F(RunDirectoryTest, PruningKeepsTheNewestWithTheirCompanionsAndRemovesLeftovers) {
  for (const char* name : {"ckpt-10.pt", "ckpt-10.pt.replay", "ckpt-10.pt.sum", "ckpt-20.pt", "ckpt-20.pt.replay",
                           "ckpt-20.pt.sum", "ckpt-30.pt", "ckpt-30.pt.replay", "ckpt-30.pt.sum",
                           "ckpt-40.pt.replay.partial", "ckpt-40.pt.sum.partial", "ckpt-5.pt.replay",
                           "ckpt-5.pt.sum"}) {
    touch(name);
  }
  dir_.prune_checkpoints(2);
  EXPECT_EQ(names(), (std::vector<std::string>{"ckpt-20.pt", "ckpt-20.pt.replay", "ckpt-20.pt.sum", "ckpt-30.pt",
                                               "ckpt-30.pt.replay", "ckpt-30.pt.sum"}));
}

// Once a checkpoint has a manifest, this build seals every later one: a later
// one without it is a save interrupted before its manifest, an earlier one an
// older build's.
TEST_F(RunDirectoryTest, ACheckpointNewerThanASealedOneIsCompleteOnlyWithItsManifest) {
  for (const char* name : {"ckpt-10.pt", "ckpt-10.pt.replay", "ckpt-20.pt", "ckpt-20.pt.replay", "ckpt-20.pt.sum",
                           "ckpt-30.pt", "ckpt-30.pt.replay"}) {
    touch(name);
  }
  EXPECT_EQ(dir_.newest_checkpoint({".replay"}), path("ckpt-20.pt"));
  EXPECT_EQ(dir_.missing_files(path("ckpt-30.pt"), {".replay"}), path("ckpt-30.pt.sum"));
  EXPECT_EQ(dir_.missing_files(path("ckpt-20.pt"), {".replay"}), "");
  EXPECT_EQ(dir_.missing_files(path("ckpt-10.pt"), {".replay"}), "");  // an older build's
  EXPECT_EQ(dir_.missing_files(path("ckpt-10.pt"), {".replay", ".other"}), path("ckpt-10.pt.other"));
  touch("ckpt-30.pt.sum");
  EXPECT_EQ(dir_.newest_checkpoint({".replay"}), path("ckpt-30.pt"));
}

TEST_F(RunDirectoryTest, RankPartsFollowTheManifestRuleAndArePrunedWithTheirManifests) {
  for (const char* name : {"rank-5.part", "rank-10.part", "rank-10.part.sum", "rank-20.part", "rank-30.part.sum",
                           "rank-40.part.sum.partial"}) {
    touch(name);
  }
  EXPECT_EQ(dir_.rank_parts_until(100), (std::vector<std::string>{path("rank-20.part"), path("rank-10.part"),
                                                                  path("rank-5.part")}));
  EXPECT_EQ(dir_.rank_parts_until(19), (std::vector<std::string>{path("rank-10.part"), path("rank-5.part")}));
  EXPECT_EQ(dir_.missing_files(path("rank-20.part"), {}), path("rank-20.part.sum"));
  EXPECT_EQ(dir_.missing_files(path("rank-5.part"), {}), "");
  dir_.prune_rank_parts(2);
  EXPECT_EQ(names(), (std::vector<std::string>{"rank-10.part", "rank-10.part.sum", "rank-20.part"}));
}

TEST_F(RunDirectoryTest, ARankResumesFromItsNewestPartAtOrBeforeTheGroupsStep) {
  EXPECT_EQ(dir_.rank_part_path(20), path("rank-20.part"));
  EXPECT_EQ(dir_.newest_rank_part(100), "");
  // A part is whole once its .part is there: rank-30's replay alone is not one.
  for (const char* name : {"rank-10.part", "rank-10.part.replay", "rank-20.part", "rank-30.part.replay", "ckpt-40.pt"}) {
    touch(name);
  }
  EXPECT_EQ(dir_.newest_rank_part(100), path("rank-20.part"));
  EXPECT_EQ(dir_.newest_rank_part(20), path("rank-20.part"));
  EXPECT_EQ(dir_.newest_rank_part(19), path("rank-10.part"));
  EXPECT_EQ(dir_.newest_rank_part(9), "");
}

TEST_F(RunDirectoryTest, PruningRankPartsKeepsTheNewestAndLeavesTheCheckpointsAlone) {
  for (const char* name : {"rank-5.part", "rank-5.part.replay", "rank-10.part", "rank-10.part.replay", "rank-20.part",
                           "rank-20.part.replay", "rank-30.part.replay", "rank-40.part.partial", "ckpt-5.pt",
                           "ckpt-5.pt.replay"}) {
    touch(name);
  }
  dir_.prune_rank_parts(2);
  EXPECT_EQ(names(), (std::vector<std::string>{"ckpt-5.pt", "ckpt-5.pt.replay", "rank-10.part", "rank-10.part.replay",
                                               "rank-20.part", "rank-20.part.replay"}));
}

}  // namespace
}  // namespace moonseed::engine
