// A real `moonseed run` whose run directory is on a small tmpfs that fills up:
// checkpoints and metrics rows fail, the run goes on, and what is on disk
// stays usable (docs/reliability.md "A full disk: checkpoints and metrics").
// Mounting needs root (CI runs as root); elsewhere the test is skipped.
#include <fcntl.h>
#include <signal.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/e2e/checkpoint_files.h"
#include "tests/e2e/process.h"

namespace moonseed::testing {
namespace {

namespace fs = std::filesystem;

const std::string kBinary = MOONSEED_BINARY;
const std::string kR2d2 = std::string(MOONSEED_SOURCE_DIR) + "/examples/cartpole_r2d2.lua";

class FullDisk : public ::testing::Test {
 protected:
  void SetUp() override {
    work_ = make_temp_dir("moonseed-full-disk");
    disk_ = work_ + "/disk";
    fs::create_directory(disk_);
    // 4 MiB: one R2D2 checkpoint of this run (~2.2 MB) fits, a second beside it does not.
    if (::mount("tmpfs", disk_.c_str(), "tmpfs", 0, "size=4m") != 0) {
      GTEST_SKIP() << "cannot mount a tmpfs on " << disk_ << " (" << std::strerror(errno)
                   << "): the full-disk test needs root (or CAP_SYS_ADMIN)";
    }
    mounted_ = true;
  }

  void TearDown() override {
    learner_.reset();  // killed if still running, so nothing holds the mount
    // Lazily when something still does: it goes once that lets go.
    if (mounted_ && ::umount(disk_.c_str()) != 0) ::umount2(disk_.c_str(), MNT_DETACH);
    std::error_code ec;
    fs::remove_all(work_, ec);
  }

  // Fills the disk to its last byte with one file: big writes, then ever smaller ones.
  void fill() {
    const int fd = ::open((disk_ + "/filler").c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    ASSERT_GE(fd, 0) << std::strerror(errno);
    const std::string block(1 << 16, 'x');
    for (size_t size = block.size(); size > 0; size /= 2) {
      while (::write(fd, block.data(), size) == static_cast<ssize_t>(size)) {
      }
    }
    ::close(fd);
  }

  void remount(const std::string& size) {
    ASSERT_EQ(::mount("tmpfs", disk_.c_str(), "tmpfs", MS_REMOUNT, ("size=" + size).c_str()), 0)
        << std::strerror(errno);
  }

  std::string work_, disk_;
  bool mounted_ = false;
  std::unique_ptr<ChildProcess> learner_;
};

// Every line of `path` as JSON, by Python's parser: "" when all parse, else what does not.
std::string lines_that_are_not_json(const std::string& path, const std::string& out) {
  ChildProcess python({"/usr/bin/python3", "-c",
                       "import json, sys\n"
                       "bad = 0\n"
                       "for n, line in enumerate(open(sys.argv[1], 'rb'), 1):\n"
                       "    try:\n"
                       "        json.loads(line)\n"
                       "    except ValueError as e:\n"
                       "        bad += 1; print('line %d: %s: %r' % (n, e, line[:200]))\n"
                       "sys.exit(1 if bad else 0)\n",
                       path},
                      out);
  const std::optional<int> code = python.wait(60);
  return code == std::optional<int>(0) ? "" : "python3 says:\n" + read_file(out);
}

// LibTorch's zip writer used to throw from its destructor on the first failed
// write: std::terminate, exit 134, and no final checkpoint. metrics.jsonl was
// cut mid-row at a 4096-byte buffer boundary.
TEST_F(FullDisk, CheckpointsAndMetricsRowsFailButTheRunGoesOnAndKeepsWhatItHas) {
  const std::string log = work_ + "/learner.log";
  learner_ = std::make_unique<ChildProcess>(
      std::vector<std::string>{kBinary, "run", kR2d2, "runs_dir=" + disk_, "log.interval_s=0.1",
                               "checkpoint.interval_s=1", "checkpoint.keep=2", "stop.eval_return_mean=0",
                               "r2d2.min_fill=64", "r2d2.capacity=1000", "stop.seconds=600", "log.progress=false"},
      log);
  ASSERT_TRUE(eventually(60, [&] { return list_dirs(disk_).size() == 1; })) << read_file(log);
  const std::string dir = list_dirs(disk_)[0];
  const auto failures = [&] { return count(read_file(log), "checkpoint failed:"); };

  // The first checkpoint fits; the next ones do not fit beside it.
  ASSERT_TRUE(eventually(60, [&] { return !newest_complete_r2d2_checkpoint(dir).empty(); })) << read_file(log);
  ASSERT_TRUE(eventually(60, [&] { return failures() >= 2 || !learner_->running(); })) << read_file(log);
  ASSERT_TRUE(learner_->running()) << read_file(log);
  // Not a byte left: rows fail too.
  fill();
  ASSERT_TRUE(eventually(60, [&] { return count(read_file(log), "metrics.jsonl: No space left on device") == 1; }))
      << read_file(log);
  ASSERT_TRUE(learner_->running()) << read_file(log);

  // Room again: rows and checkpoints are written again, on their own.
  fs::remove(disk_ + "/filler");
  remount("32m");
  ASSERT_TRUE(eventually(60, [&] { return count(read_file(log), "failed attempt(s)") == 1; })) << read_file(log);
  ASSERT_TRUE(eventually(60, [&] { return count(read_file(log), "metrics.jsonl is written again") == 1; }))
      << read_file(log);

  // Full again, to the end: the final checkpoint fails as well.
  const size_t failed_before = failures();
  fill();
  ASSERT_TRUE(eventually(60, [&] { return failures() > failed_before; })) << read_file(log);
  ASSERT_TRUE(eventually(60, [&] { return count(read_file(log), "metrics.jsonl: No space left on device") >= 2; }))
      << read_file(log);
  learner_->signal(SIGINT);
  const std::optional<int> code = learner_->wait(60);
  const std::string out = read_file(log);
  ASSERT_EQ(code, std::optional<int>(0)) << out;
  EXPECT_NE(out.find("training goes on"), std::string::npos) << out;
  EXPECT_NE(out.find("final checkpoint failed"), std::string::npos) << out;
  EXPECT_NE(out.find("--resume continues from"), std::string::npos) << out;
  // Once per outage, not once per row: each report after the first follows a
  // "written again". (A failed checkpoint frees what its file had taken before
  // the disk filled, so a row may fit between two outages we did not cause.)
  std::vector<char> outages;
  for (size_t at = out.find("metrics.jsonl"); at != std::string::npos; at = out.find("metrics.jsonl", at + 1)) {
    if (out.compare(at, 40, "metrics.jsonl: No space left on device; ") == 0) outages.push_back('x');
    if (out.compare(at, 30, "metrics.jsonl is written again") == 0) outages.push_back('o');
  }
  ASSERT_GE(outages.size(), 3u) << out;
  for (size_t i = 0; i < outages.size(); ++i) EXPECT_EQ(outages[i], i % 2 == 0 ? 'x' : 'o') << "report " << i << "\n" << out;

  EXPECT_EQ(lines_that_are_not_json(dir + "/metrics.jsonl", work_ + "/python.log"), "");
  // Every checkpoint file there is whole and loads, with its replay; no half-written one is left.
  size_t loaded = 0;
  for (const std::string& name : file_names(dir + "/checkpoints")) {
    EXPECT_EQ(name.find(".partial"), std::string::npos) << name;
    if (checkpoint_step(name) < 0) continue;
    const std::string path = dir + "/checkpoints/" + name;
    EXPECT_TRUE(fs::exists(path + ".replay")) << name;
    EXPECT_NO_THROW(load_checkpoint(dir, path)) << name;
    ++loaded;
  }
  EXPECT_GE(loaded, 1u);
}

}  // namespace
}  // namespace moonseed::testing
