// TensorBoard event files as bytes: CRC-32C against published vectors, the
// TFRecord framing of one record, and a writer on real files that cannot be
// written (no directory, /dev/full, a file size limit), which logs once,
// never throws, and leaves whole records only.
#include "observe/tfevents_writer.h"

#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "base/log.h"
#include "observe/crc32c.h"

namespace moonseed::observe {
namespace {

namespace fs = std::filesystem;

std::string read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

uint64_t le(const std::string& bytes, size_t at, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(bytes[at + i]);
  return v;
}

// The records of a file, each checked by both CRCs; `rest` gets the bytes
// after the last complete record. A bad CRC fails the test.
std::vector<std::string> records(const std::string& file, size_t* rest = nullptr) {
  std::vector<std::string> out;
  size_t at = 0;
  while (file.size() - at >= 12) {
    const uint64_t length = le(file, at, 8);
    if (file.size() - at - 12 < length + 4) break;
    EXPECT_EQ(le(file, at + 8, 4), masked_crc32c(file.substr(at, 8))) << "length CRC of the record at " << at;
    std::string data = file.substr(at + 12, length);
    EXPECT_EQ(le(file, at + 12 + length, 4), masked_crc32c(data)) << "data CRC of the record at " << at;
    out.push_back(std::move(data));
    at += 12 + length + 4;
  }
  if (rest) *rest = file.size() - at;
  return out;
}

// Counts the lines logged while it lives.
class LogLines {
 public:
  LogLines() {
    previous_ = base::set_log_sink([this](const base::LogLine& line) { lines.emplace_back(line.text); });
  }
  ~LogLines() { base::set_log_sink(previous_); }
  std::vector<std::string> lines;

 private:
  base::LogSink previous_;
};

class TfEventsWriterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("moonseed-tfevents-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST(Crc32cTest, MatchesPublishedVectors) {
  EXPECT_EQ(crc32c(""), 0u);
  EXPECT_EQ(crc32c("123456789"), 0xE3069283u);
  EXPECT_EQ(crc32c(std::string(32, '\0')), 0x8A9136AAu);    // RFC 3720, B.4
  EXPECT_EQ(crc32c(std::string(32, '\xff')), 0x62A8AB43u);  // RFC 3720, B.4
}

TEST(Crc32cTest, MaskRotatesAndAddsTheConstant) {
  EXPECT_EQ(mask_crc(0), 0xa282ead8u);
  EXPECT_EQ(mask_crc(0xE3069283u), 0xc78ab0e5u);
  EXPECT_EQ(masked_crc32c("123456789"), 0xc78ab0e5u);
}

TEST(TfRecordTest, FramesOneRecord) {
  const std::string expected("\x03\x00\x00\x00\x00\x00\x00\x00"  // length 3, little-endian
                             "\xb0\x99\x49\x0e"                   // masked CRC of the length bytes
                             "abc"
                             "\x6e\x57\xf1\x21",                  // masked CRC of "abc"
                             19);
  EXPECT_EQ(tfrecord("abc"), expected);
}

TEST_F(TfEventsWriterTest, NamesFilesAsTensorBoardDoesAndNeverReusesOne) {
  const std::string first = TfEventsWriter::new_file_path(dir_, 1700000000);
  EXPECT_EQ(fs::path(first).filename().string().rfind("events.out.tfevents.1700000000.", 0), 0u) << first;
  { TfEventsWriter w(first); }
  const std::string second = TfEventsWriter::new_file_path(dir_, 1700000000);
  EXPECT_EQ(second, first + ".1");
}

TEST_F(TfEventsWriterTest, WritesTheFileVersionFirstAndEveryRecordWhole) {
  const std::string path = TfEventsWriter::new_file_path(dir_, 1700000000);
  LogLines log;
  {
    TfEventsWriter w(path);
    EXPECT_TRUE(w.ok());
    // The file version is on disk before any flush of the caller's.
    const std::vector<std::string> head = records(read(path));
    ASSERT_EQ(head.size(), 1u);
    EXPECT_NE(head[0].find("brain.Event:2"), std::string::npos);
    w.scalar("fps", 100, 1.7e9, 1234.5);
    w.text("config", 0, 1.7e9, "return { seed = 1 }");
    EXPECT_TRUE(w.flush());
    w.scalar("fps", 200, 1.7e9, 99);  // written by the destructor
  }
  size_t rest = 0;
  const std::vector<std::string> all = records(read(path), &rest);
  EXPECT_EQ(all.size(), 4u);
  EXPECT_EQ(rest, 0u);
  EXPECT_NE(all[1].find("fps"), std::string::npos);
  EXPECT_NE(all[2].find("return { seed = 1 }"), std::string::npos);
  EXPECT_NE(all[2].find("text"), std::string::npos);  // the text plugin's name
  EXPECT_TRUE(log.lines.empty());
}

TEST_F(TfEventsWriterTest, AFileThatCannotBeCreatedIsReportedOnce) {
  LogLines log;
  const std::string path = (dir_ / "no-such-dir" / "events.out.tfevents.1.host").string();
  TfEventsWriter w(path);
  EXPECT_FALSE(w.ok());
  for (int i = 0; i < 3; ++i) {
    EXPECT_NO_THROW(w.scalar("fps", i, 1.7e9, i));
    EXPECT_FALSE(w.flush());
  }
  ASSERT_EQ(log.lines.size(), 1u);
  EXPECT_NE(log.lines[0].find(path), std::string::npos) << log.lines[0];
  EXPECT_NE(log.lines[0].find("No such file or directory"), std::string::npos) << log.lines[0];
  EXPECT_EQ(w.dropped_records(), 3);
  EXPECT_FALSE(fs::exists(path));
}

TEST_F(TfEventsWriterTest, AFullDiskIsReportedOnceAndNeverThrows) {
  LogLines log;
  {
    TfEventsWriter w("/dev/full");  // every write fails with ENOSPC
    EXPECT_FALSE(w.ok());
    for (int i = 0; i < 3; ++i) {
      EXPECT_NO_THROW(w.scalar("fps", i, 1.7e9, i));
      EXPECT_NO_THROW(w.text("event/reload", i, 1.7e9, "reloaded"));
      EXPECT_FALSE(w.flush());
    }
    EXPECT_EQ(w.dropped_records(), 7);  // the file version and the six above
  }
  ASSERT_EQ(log.lines.size(), 1u);
  EXPECT_NE(log.lines[0].find("/dev/full"), std::string::npos) << log.lines[0];
  EXPECT_NE(log.lines[0].find("No space left on device"), std::string::npos) << log.lines[0];
}

// A write cut short by a file size limit (as by a disk that fills) is cut off
// again, so the file holds whole records only; what waited is dropped, and the
// next record that fits is written after the last whole one (the outage ends).
TEST_F(TfEventsWriterTest, AShortWriteLeavesWholeRecordsOnlyAndWritingResumesWhenThereIsRoom) {
  const std::string path = (dir_ / "events.out.tfevents.1.host").string();
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::signal(SIGXFSZ, SIG_IGN);
    const rlimit limit{400, RLIM_INFINITY};
    if (::setrlimit(RLIMIT_FSIZE, &limit) != 0) ::_exit(99);
    std::vector<std::string> logged;
    base::set_log_sink([&logged](const base::LogLine& line) { logged.emplace_back(line.text); });
    TfEventsWriter w(path);
    w.scalar("fps", 1, 1.7e9, 1);
    if (!w.flush()) ::_exit(98);                   // two small records fit
    w.text("big", 2, 1.7e9, std::string(1000, 'x'));  // this one does not
    w.scalar("fps", 3, 1.7e9, 3);                     // and waits with it: dropped
    if (w.flush() || w.ok()) ::_exit(97);
    w.scalar("fps", 4, 1.7e9, 4);  // fits: written
    if (!w.flush() || !w.ok()) ::_exit(96);
    if (w.dropped_records() != 2) ::_exit(95);
    if (logged.size() != 2 || logged[0].find("File too large") == std::string::npos ||
        logged[1].find("again (2 records dropped") == std::string::npos) {
      ::_exit(94);
    }
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "98: the first flush failed, 97: the big one did not, 96: the last did, "
                                       "95: dropped count, 94: not the two log lines";
  size_t rest = 1;
  const std::vector<std::string> written = records(read(path), &rest);
  EXPECT_EQ(rest, 0u);
  ASSERT_EQ(written.size(), 3u);  // the file version, fps at 1 and at 4
  // The third is fps at 4: the same bytes as the record a fresh writer makes of it.
  const std::string fresh_path = (dir_ / "events.out.tfevents.2.host").string();
  {
    TfEventsWriter fresh(fresh_path);
    fresh.scalar("fps", 4, 1.7e9, 4);
  }
  const std::vector<std::string> expected = records(read(fresh_path));
  ASSERT_EQ(expected.size(), 2u);
  EXPECT_EQ(written[2], expected[1]);
}

}  // namespace
}  // namespace moonseed::observe
