// A LogWriter whose directory is on a small tmpfs that fills up (ENOSPC, as
// a real full disk): the segment being written is published with its whole
// chunks, the log verifies clean, and the stats tell durable records from
// lost ones. Mounting needs root (CI runs as root); elsewhere these skip.
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "explog/reader.h"
#include "explog/writer.h"
#include "tests/explog/explog_test_records.h"
#include "tests/explog/explog_test_util.h"
#include "tests/small_disk.h"

namespace moonseed::explog {
namespace {

using moonseed::testing::SmallDisk;
using testing::known_record;
using testing::known_schema;
using testing::read_all;
using testing::TempDir;

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::vector<std::string> partial_files(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (ends_with(e.path().string(), ".partial")) out.push_back(e.path().string());
  }
  return out;
}

WriterOptions small_chunks(const std::string& dir) {
  WriterOptions o;
  o.directory = dir;
  o.chunk_target_bytes = 1024;
  o.segment_max_bytes = 64 << 10;  // several segments before the disk is full
  o.queue_max_records = 4;
  o.full_queue = FullQueuePolicy::kBackpressure;  // must not block once the writer is off
  return o;
}

// Every record a reader finds is the next known one; returns their steps.
uint64_t expect_known_records(const LogReader& reader, size_t count) {
  const std::vector<Record> records = read_all(reader);
  EXPECT_EQ(records.size(), count);
  uint64_t steps = 0;
  for (size_t i = 0; i < records.size(); ++i) {
    EXPECT_EQ(records[i].meta, known_record(static_cast<int64_t>(i)).meta) << i;
    EXPECT_EQ(records[i].columns, known_record(static_cast<int64_t>(i)).columns) << i;
    steps += static_cast<uint64_t>(records[i].meta.steps);
  }
  return steps;
}

TEST(ExplogFullDisk, TheSegmentBeingWrittenIsPublishedWithItsWholeChunksAndTheRestCountsAsLost) {
  TempDir tmp;
  SmallDisk disk;
  if (!disk.mount(tmp.sub("disk"), "256k")) GTEST_SKIP() << disk.mount_error();
  const std::string dir = disk.path() + "/log";
  LogWriter writer(known_schema(), small_chunks(dir));
  int64_t i = 0;
  while (writer.stats().error.empty() && i < 1000000) {
    writer.append(known_record(i++));
    if (i % 16 == 0) writer.flush();
  }
  int accepted_after_error = 0;
  for (int k = 0; k < 100; ++k) accepted_after_error += writer.append(known_record(i++));
  EXPECT_EQ(accepted_after_error, 0);
  EXPECT_FALSE(writer.flush());
  writer.close();
  const WriterStats s = writer.stats();

  // One error, naming the file, the errno text and what became of the segment.
  EXPECT_NE(s.error.find("cannot write " + dir + "/experience-"), std::string::npos) << s.error;
  EXPECT_NE(s.error.find("No space left on device"), std::string::npos) << s.error;
  EXPECT_NE(s.error.find(".mslog keeps its "), std::string::npos) << s.error;

  // Published, every one: no .partial is left, and the log verifies clean.
  EXPECT_EQ(partial_files(dir), std::vector<std::string>{});
  const LogReader reader(dir);
  const std::vector<LogProblem> problems = reader.verify();
  EXPECT_TRUE(problems.empty()) << problems.front().message;
  EXPECT_GE(reader.segments().size(), 2u);
  EXPECT_EQ(reader.segments().size(), s.segments);

  // Durable is exactly what the log holds; lost is the rest, and nothing is
  // counted as dropped (that is a full queue's).
  const uint64_t steps = expect_known_records(reader, s.durable_records);
  EXPECT_EQ(s.durable_steps, steps);
  EXPECT_GT(s.durable_records, 0u);
  EXPECT_GE(s.lost, 100u);
  EXPECT_EQ(s.dropped, 0u);
  EXPECT_EQ(s.appended, s.durable_records + s.lost);
  uint64_t all_steps = 0;
  for (int64_t k = 0; k < i; ++k) all_steps += static_cast<uint64_t>(known_record(k).meta.steps);
  EXPECT_EQ(s.durable_steps + s.lost_steps, all_steps);
}

TEST(ExplogFullDisk, AWriterOpenedOnAFullDiskLeavesNoEmptySegmentBehind) {
  TempDir tmp;
  SmallDisk disk;
  if (!disk.mount(tmp.sub("disk"), "256k")) GTEST_SKIP() << disk.mount_error();
  const std::string dir = disk.path() + "/log";
  {
    LogWriter first(known_schema(), small_chunks(dir));
    for (int64_t i = 0; i < 50; ++i) first.append(known_record(i));
  }
  disk.fill();
  // A resumed run's writer: its first segment's header does not fit.
  try {
    LogWriter second(known_schema(), small_chunks(dir));
    FAIL() << "the writer opened on a full disk";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot write " + dir + "/experience-000002.mslog.partial: No space "
                                         "left on device"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(partial_files(dir), std::vector<std::string>{});
  const LogReader reader(dir);
  EXPECT_TRUE(reader.verify().empty()) << reader.verify().front().message;
  expect_known_records(reader, 50);
}

}  // namespace
}  // namespace moonseed::explog
