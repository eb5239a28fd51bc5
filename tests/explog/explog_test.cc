// Experience log writer and reader, in one process, on real files.
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "explog/reader.h"
#include "explog/writer.h"
#include "tests/explog/explog_test_records.h"
#include "tests/explog/explog_test_util.h"

namespace moonseed::explog {
namespace {

namespace fs = std::filesystem;
using testing::flip_byte;
using testing::known_meta;
using testing::known_record;
using testing::known_schema;
using testing::read_all;
using testing::segment_files;
using testing::TempDir;

WriterOptions options_for(const std::string& dir) {
  WriterOptions o;
  o.directory = dir;
  o.chunk_target_bytes = 512;
  o.segment_max_bytes = 0;
  o.full_queue = FullQueuePolicy::kBackpressure;
  return o;
}

void write_known(const WriterOptions& o, int64_t begin, int64_t end) {
  LogWriter w(known_schema(), o);
  for (int64_t i = begin; i < end; ++i) ASSERT_TRUE(w.append(known_record(i)));
  w.close();
  ASSERT_EQ(w.stats().error, "");
}

void expect_known(const Record& r, int64_t i) {
  const Record want = known_record(i);
  EXPECT_EQ(r.meta, want.meta) << "record " << i;
  EXPECT_EQ(r.columns, want.columns) << "record " << i;
}

// Index of a known record, from its env id.
int64_t known_index(const Record& r) { return r.meta.env_id - 100; }

TEST(ExplogLog, RoundTripKeepsEveryFieldAcrossChunksAndSegments) {
  TempDir dir;
  WriterOptions o = options_for(dir.path());
  o.segment_max_bytes = 2048;
  LogWriter w(known_schema(), o);
  for (int i = 0; i < 60; ++i) ASSERT_TRUE(w.append(known_record(i)));
  w.close();
  const WriterStats s = w.stats();
  EXPECT_EQ(s.error, "");
  EXPECT_EQ(s.appended, 60u);
  EXPECT_EQ(s.written, 60u);
  EXPECT_EQ(s.durable_records, 60u);
  EXPECT_EQ(s.dropped, 0u);

  const std::vector<std::string> files = segment_files(dir.path());
  ASSERT_GE(files.size(), 2u);
  EXPECT_EQ(s.segments, files.size());
  uint64_t disk = 0;
  for (const std::string& f : files) {
    EXPECT_EQ(fs::path(f).extension(), ".mslog") << f;
    disk += fs::file_size(f);
  }
  EXPECT_EQ(s.bytes_disk, disk);
  EXPECT_EQ(s.durable_bytes, disk);

  LogReader reader(dir.path());
  EXPECT_EQ(reader.schema().run_id, "run-known");
  EXPECT_EQ(reader.schema().spec, known_schema().spec);
  EXPECT_GT(reader.chunks().size(), files.size());
  for (const SegmentInfo& seg : reader.segments()) EXPECT_TRUE(seg.has_footer) << seg.path;
  const std::vector<Record> records = read_all(reader);
  ASSERT_EQ(records.size(), 60u);
  for (int i = 0; i < 60; ++i) expect_known(records[i], i);
  EXPECT_TRUE(reader.problems().empty());
  EXPECT_TRUE(reader.verify().empty());
}

// Codec "none" makes every size known: a chunk of one record with 1000 u8 is
// 88 header + 56 meta + 1000 data = 1144 bytes, so with a 3000-byte limit a
// segment rolls after its third chunk (header + 3432 >= 3000 > header + 2288).
TEST(ExplogLog, SegmentsRollBySizeAtTheHandDerivedBoundary) {
  TempDir dir;
  LogSchema schema;
  schema.run_id = "r";
  schema.codec = "none";
  schema.columns = {{"frame", DType::kU8, {1000}}};
  WriterOptions o = options_for(dir.path());
  o.chunk_target_bytes = 1;  // one record per chunk
  o.segment_max_bytes = 3000;
  LogWriter w(schema, o);
  for (int i = 0; i < 7; ++i) {
    Record r;
    r.meta.steps = 1;
    r.meta.episode_id = i;
    r.columns = {std::vector<uint8_t>(1000, static_cast<uint8_t>(i))};
    ASSERT_TRUE(w.append(std::move(r)));
  }
  w.close();
  const uint64_t header = encode_file_header(schema).size();
  const uint64_t footer3 = 16 + 3 * 52 + 20, footer1 = 16 + 52 + 20;
  const std::vector<std::string> files = segment_files(dir.path());
  ASSERT_EQ(files.size(), 3u);
  EXPECT_EQ(fs::file_size(files[0]), header + 3 * 1144 + footer3);
  EXPECT_EQ(fs::file_size(files[1]), header + 3 * 1144 + footer3);
  EXPECT_EQ(fs::file_size(files[2]), header + 1144 + footer1);
  EXPECT_EQ(fs::path(files[0]).filename(), "experience-000001.mslog");
  EXPECT_EQ(fs::path(files[2]).filename(), "experience-000003.mslog");
  EXPECT_EQ(w.stats().segments, 3u);
  LogReader reader(files[1]);
  const std::vector<Record> records = read_all(reader);
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(records[0].meta.episode_id, 3);
  EXPECT_EQ(records[0].columns[0], std::vector<uint8_t>(1000, 3));
}

TEST(ExplogLog, SegmentsRollByAgeOnTheInjectedClock) {
  TempDir dir;
  auto now_ms = std::make_shared<std::atomic<int64_t>>(0);
  WriterOptions o = options_for(dir.path());
  o.chunk_target_bytes = 1 << 20;  // chunks are cut by flush() only
  o.sync_interval_ms = 600000;
  o.segment_max_age_ms = 1000;
  o.clock_ns = [now_ms] { return now_ms->load() * 1000000; };
  LogWriter w(known_schema(), o);
  w.append(known_record(0));
  *now_ms = 1000;  // segment 1 (opened at 0) is 1000 ms old when record 0 is written
  ASSERT_TRUE(w.flush());
  w.append(known_record(1));  // segment 2 opens at 1000
  ASSERT_TRUE(w.flush());
  w.append(known_record(2));
  *now_ms = 1999;
  ASSERT_TRUE(w.flush());
  *now_ms = 2000;
  w.close();
  const std::vector<std::string> files = segment_files(dir.path());
  ASSERT_EQ(files.size(), 2u);
  EXPECT_EQ(LogReader(files[0]).record_count(), 1u);
  EXPECT_EQ(LogReader(files[1]).record_count(), 2u);
  EXPECT_EQ(read_all(LogReader(dir.path())).size(), 3u);
}

TEST(ExplogLog, EmptyLogIsOnePublishedSegmentWithoutChunks) {
  TempDir dir;
  LogWriter(known_schema(), options_for(dir.path())).close();
  const std::vector<std::string> files = segment_files(dir.path());
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(fs::path(files[0]).filename(), "experience-000001.mslog");
  LogReader reader(dir.path());
  EXPECT_EQ(reader.record_count(), 0u);
  EXPECT_TRUE(reader.segments()[0].has_footer);
  EXPECT_TRUE(reader.verify().empty());
}

TEST(ExplogLog, SecondWriterInTheSameDirectoryContinuesTheSegmentNumbers) {
  TempDir dir;
  write_known(options_for(dir.path()), 0, 5);
  write_known(options_for(dir.path()), 5, 9);
  const std::vector<std::string> files = segment_files(dir.path());
  ASSERT_EQ(files.size(), 2u);
  EXPECT_EQ(fs::path(files[1]).filename(), "experience-000002.mslog");
  const std::vector<Record> records = read_all(LogReader(dir.path()));
  ASSERT_EQ(records.size(), 9u);
  for (int i = 0; i < 9; ++i) expect_known(records[i], i);
}

TEST(ExplogLog, FlushedRecordsAreReadableWhileTheWriterIsOpen) {
  TempDir dir;
  WriterOptions o = options_for(dir.path());
  o.sync_interval_ms = 600000;
  LogWriter w(known_schema(), o);
  for (int i = 0; i < 10; ++i) w.append(known_record(i));
  ASSERT_TRUE(w.flush());
  EXPECT_EQ(w.stats().durable_records, 10u);
  LogReader reader(dir.path());
  EXPECT_EQ(fs::path(reader.segments()[0].path).extension(), ".partial");
  EXPECT_FALSE(reader.segments()[0].has_footer);
  EXPECT_TRUE(reader.problems().empty());  // a clean end between chunks
  const std::vector<Record> records = read_all(reader);
  ASSERT_EQ(records.size(), 10u);
  expect_known(records[9], 9);
}

TEST(ExplogLog, CorruptChunkDataIsLocatedAndOtherChunksStayReadable) {
  TempDir dir;
  write_known(options_for(dir.path()), 0, 40);
  const std::string file = segment_files(dir.path())[0];
  std::vector<ChunkRef> chunks;
  {
    LogReader reader(file);
    chunks = reader.chunks();
  }
  ASSERT_GE(chunks.size(), 4u);
  flip_byte(file, chunks[3].summary.offset - 5);  // in the data of chunk 2
  LogReader reader(file);
  const std::vector<LogProblem> problems = reader.verify();
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].chunk, 2);
  EXPECT_EQ(problems[0].offset, chunks[2].summary.offset);
  EXPECT_EQ(problems[0].file, file);
  EXPECT_EQ(problems[0].message, "chunk 2 at offset " + std::to_string(chunks[2].summary.offset) +
                                     " of " + file + ": chunk data checksum mismatch");
  std::vector<LogProblem> skipped;
  const std::vector<Record> records = read_all(reader, &skipped);
  EXPECT_EQ(skipped.size(), 1u);
  EXPECT_EQ(records.size(), 40u - chunks[2].summary.record_count);
  for (const Record& r : records) expect_known(r, known_index(r));
  EXPECT_THROW(reader.read_chunk(2), FormatError);
}

TEST(ExplogLog, CorruptChunkHeaderIsLocatedAndOtherChunksStayReadable) {
  TempDir dir;
  write_known(options_for(dir.path()), 0, 40);
  const std::string file = segment_files(dir.path())[0];
  std::vector<ChunkRef> chunks = LogReader(file).chunks();
  ASSERT_GE(chunks.size(), 3u);
  flip_byte(file, chunks[1].summary.offset + 20);  // chunk 1's min wall time
  LogReader reader(file);
  const std::vector<LogProblem> problems = reader.verify();
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].chunk, 1);
  EXPECT_EQ(problems[0].offset, chunks[1].summary.offset);
  EXPECT_NE(problems[0].message.find("header checksum mismatch"), std::string::npos)
      << problems[0].message;
  const std::vector<Record> records = read_all(reader);
  EXPECT_EQ(records.size(), 40u - chunks[1].summary.record_count);
  for (const Record& r : records) expect_known(r, known_index(r));
}

// A segment without footer: cut the footer off a published one.
std::string strip_footer(const std::string& file) {
  uint64_t footer_offset = 0;
  {
    LogReader reader(file);
    footer_offset = reader.segments()[0].data_end;
  }
  fs::resize_file(file, footer_offset);
  const std::string partial = file + ".partial";
  fs::rename(file, partial);
  return partial;
}

TEST(ExplogLog, CorruptHeaderWithoutFooterIsSkippedByScanningToTheNextChunk) {
  TempDir dir;
  write_known(options_for(dir.path()), 0, 40);
  const std::string file = segment_files(dir.path())[0];
  const std::vector<ChunkRef> chunks = LogReader(file).chunks();
  const std::string partial = strip_footer(file);
  flip_byte(partial, chunks[1].summary.offset + 20);
  LogReader reader(partial);
  ASSERT_EQ(reader.problems().size(), 1u);
  const LogProblem& p = reader.problems()[0];
  EXPECT_FALSE(p.torn);
  EXPECT_EQ(p.chunk, 1);
  EXPECT_EQ(p.offset, chunks[1].summary.offset);
  EXPECT_NE(p.message.find("skipped to the next chunk at offset " +
                           std::to_string(chunks[2].summary.offset)),
            std::string::npos)
      << p.message;
  ASSERT_EQ(reader.chunks().size(), chunks.size() - 1);
  const std::vector<Record> records = read_all(reader);
  EXPECT_EQ(records.size(), 40u - chunks[1].summary.record_count);
  for (const Record& r : records) expect_known(r, known_index(r));
}

TEST(ExplogLog, TornTailIsReportedAndEveryCompleteChunkIsReadable) {
  for (const int cut_into : {30, 150}) {  // inside the last chunk's header, inside its data
    TempDir dir;
    write_known(options_for(dir.path()), 0, 40);
    const std::string file = segment_files(dir.path())[0];
    const std::vector<ChunkRef> chunks = LogReader(file).chunks();
    const std::string partial = strip_footer(file);
    const uint64_t last = chunks.back().summary.offset;
    fs::resize_file(partial, last + cut_into);
    LogReader reader(dir.path());
    ASSERT_EQ(reader.problems().size(), 1u) << cut_into;
    const LogProblem& p = reader.problems()[0];
    EXPECT_TRUE(p.torn);
    EXPECT_EQ(p.offset, last);
    const std::string want = "torn at offset " + std::to_string(last) + " of " + partial + " (" +
                             std::to_string(chunks.size() - 1) + " complete chunks before it)";
    EXPECT_EQ(p.message.substr(0, want.size()), want) << p.message;
    const std::vector<Record> records = read_all(reader);
    ASSERT_EQ(records.size(), 40u - chunks.back().summary.record_count);
    for (size_t i = 0; i < records.size(); ++i) expect_known(records[i], static_cast<int64_t>(i));
    EXPECT_EQ(reader.verify().size(), 1u);
  }
}

TEST(ExplogLog, FiltersUseTheIndexWithoutDecodingOtherChunks) {
  TempDir dir;
  WriterOptions o = options_for(dir.path());
  o.chunk_target_bytes = 1;  // one record per chunk
  write_known(o, 0, 40);
  LogReader reader(dir.path());
  ASSERT_EQ(reader.chunks().size(), 40u);
  auto collect = [&](const RecordFilter& f) {
    std::vector<int64_t> out;
    RecordCursor c = reader.scan(f);
    while (std::optional<Record> r = c.next()) out.push_back(known_index(*r));
    return out;
  };
  RecordFilter by_episode;
  by_episode.episode_id = 3;  // i / 2 - 5 == 3
  EXPECT_EQ(collect(by_episode), (std::vector<int64_t>{16, 17}));
  EXPECT_EQ(reader.chunks_decoded(), 2u);

  RecordFilter by_actor;
  by_actor.actor_id = 1;  // i % 3 == 1
  EXPECT_EQ(collect(by_actor).size(), 13u);
  EXPECT_EQ(reader.chunks_decoded(), 2u + 13u);

  RecordFilter by_time;
  by_time.min_wall_time_ns = known_meta(10).wall_time_ns;
  by_time.max_wall_time_ns = known_meta(12).wall_time_ns;
  EXPECT_EQ(collect(by_time), (std::vector<int64_t>{10, 11, 12}));
  EXPECT_EQ(reader.chunks_decoded(), 2u + 13u + 3u);
}

TEST(ExplogLog, FilterInsideAChunkKeepsOnlyMatchingRecords) {
  TempDir dir;
  write_known(options_for(dir.path()), 0, 40);  // several records per chunk
  LogReader reader(dir.path());
  RecordFilter f;
  f.episode_id = 3;
  f.actor_id = 1;  // of records 16 (actor 1) and 17 (actor 2)
  RecordCursor c = reader.scan(f);
  std::optional<Record> r = c.next();
  ASSERT_TRUE(r.has_value());
  expect_known(*r, 16);
  EXPECT_FALSE(c.next().has_value());
}

TEST(ExplogLog, DropPolicyCountsWhatTheFullQueueRefused) {
  TempDir dir;
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  WriterOptions o = options_for(dir.path());
  o.full_queue = FullQueuePolicy::kDrop;
  o.queue_max_records = 1;
  o.before_chunk_write = [released] { released.wait(); };  // the disk stalls until released
  LogWriter w(known_schema(), o);
  EXPECT_TRUE(w.append(known_record(0)));
  for (int i = 1; i < 10; ++i) EXPECT_FALSE(w.append(known_record(i)));  // never blocks
  EXPECT_EQ(w.stats().dropped, 9u);
  release.set_value();
  ASSERT_TRUE(w.flush());
  EXPECT_TRUE(w.append(known_record(10)));
  w.close();
  const WriterStats s = w.stats();
  EXPECT_EQ(s.appended, 11u);
  EXPECT_EQ(s.dropped, 9u);
  EXPECT_EQ(s.durable_records, 2u);
  const std::vector<Record> records = read_all(LogReader(dir.path()));
  ASSERT_EQ(records.size(), 2u);
  expect_known(records[0], 0);
  expect_known(records[1], 10);
}

TEST(ExplogLog, BackpressurePolicyLosesNothingWithASlowDisk) {
  TempDir dir;
  WriterOptions o = options_for(dir.path());
  o.full_queue = FullQueuePolicy::kBackpressure;
  o.queue_max_records = 1;
  o.before_chunk_write = [] { std::this_thread::sleep_for(std::chrono::microseconds(200)); };
  LogWriter w(known_schema(), o);
  std::thread other([&] {
    for (int i = 100; i < 200; ++i) w.append(known_record(i));
  });
  for (int i = 0; i < 100; ++i) w.append(known_record(i));
  other.join();
  w.close();
  EXPECT_EQ(w.stats().dropped, 0u);
  EXPECT_EQ(w.stats().durable_records, 200u);
  const std::vector<Record> records = read_all(LogReader(dir.path()));
  ASSERT_EQ(records.size(), 200u);
  int64_t last_a = -1, last_b = 99;  // each thread's records stay in its order
  for (const Record& r : records) {
    const int64_t i = known_index(r);
    expect_known(r, i);
    int64_t& last = i < 100 ? last_a : last_b;
    EXPECT_EQ(i, last + 1);
    last = i;
  }
}

TEST(ExplogLog, SeveralCompressorThreadsKeepAppendOrder) {
  TempDir dir;
  WriterOptions o = options_for(dir.path());
  o.compress_threads = 3;
  o.chunk_target_bytes = 256;
  write_known(o, 0, 300);
  const std::vector<Record> records = read_all(LogReader(dir.path()));
  ASSERT_EQ(records.size(), 300u);
  for (int i = 0; i < 300; ++i) ASSERT_EQ(known_index(records[i]), i);
}

TEST(ExplogLog, AppendFromColumnPointersWritesTheSameRecords) {
  TempDir dir;
  WriterOptions o = options_for(dir.path());
  {
    LogWriter w(known_schema(), o);
    for (int64_t i = 0; i < 40; ++i) {
      const Record r = known_record(i);
      std::vector<const uint8_t*> columns;
      for (const auto& c : r.columns) columns.push_back(c.data());
      ASSERT_TRUE(w.append(r.meta, columns.data()));
    }
    w.close();
    EXPECT_EQ(w.stats().written, 40u);
    EXPECT_EQ(w.stats().error, "");
  }
  const std::vector<Record> records = read_all(LogReader(dir.path()));
  ASSERT_EQ(records.size(), 40u);
  for (int64_t i = 0; i < 40; ++i) expect_known(records[static_cast<size_t>(i)], i);
}

TEST(ExplogLog, ARecordAsLongAsAChunkIsWrittenFromItsOwnMemoryAsAChunkOfItsOwn) {
  TempDir dir;
  WriterOptions o = options_for(dir.path());
  o.chunk_target_bytes = 200;  // known_record(9): 4 steps, 200 bytes with its meta
  std::vector<std::weak_ptr<Record>> held;
  {
    LogWriter w(known_schema(), o);
    ASSERT_TRUE(w.append(known_record(1)));  // 1 step: copied, stays open
    for (int64_t i : {9, 2}) {
      auto unroll = std::make_shared<Record>(known_record(i));
      held.push_back(unroll);
      std::vector<const uint8_t*> columns;
      for (const auto& c : unroll->columns) columns.push_back(c.data());
      ASSERT_TRUE(w.append(unroll->meta, columns.data(), unroll));
    }
    EXPECT_TRUE(held[1].expired()) << "a record shorter than a chunk is copied, its keepalive let go at once";
    ASSERT_TRUE(w.flush());
    EXPECT_TRUE(held[0].expired()) << "a referenced record is let go once its chunk is compressed";
    w.close();
  }
  LogReader reader(dir.path());
  ASSERT_EQ(reader.chunks().size(), 3u);
  // What was open is cut before the long record, which is a chunk of its own.
  EXPECT_EQ(reader.chunks()[0].summary.record_count, 1u);
  EXPECT_EQ(reader.chunks()[1].summary.record_count, 1u);
  EXPECT_EQ(reader.chunks()[1].summary.min_episode_id, known_meta(9).episode_id);
  EXPECT_EQ(reader.chunks()[2].summary.record_count, 1u);
  const std::vector<Record> records = read_all(reader);
  ASSERT_EQ(records.size(), 3u);
  expect_known(records[0], 1);
  expect_known(records[1], 9);
  expect_known(records[2], 2);
}

TEST(ExplogLog, SegmentsWithOtherCodecsAndFiltersReadAsOneLog) {
  // A resumed run may write with other settings into the same directory.
  TempDir dir;
  const WriterOptions o = options_for(dir.path());
  {
    LogWriter w(known_schema("none"), o);
    for (int64_t i = 0; i < 10; ++i) ASSERT_TRUE(w.append(known_record(i)));
    w.close();
  }
  {
    LogSchema filtered = known_schema("lz4");
    filtered.columns[0].filter = ColumnFilter::kXorPrevious;
    LogWriter w(filtered, o);
    for (int64_t i = 10; i < 20; ++i) ASSERT_TRUE(w.append(known_record(i)));
    w.close();
  }
  LogReader reader(dir.path());
  EXPECT_TRUE(reader.problems().empty());
  ASSERT_EQ(reader.segments().size(), 2u);
  EXPECT_EQ(reader.segments()[0].schema.codec, "none");
  EXPECT_EQ(reader.segments()[1].schema.codec, "lz4");
  EXPECT_EQ(reader.segments()[1].schema.columns[0].filter, ColumnFilter::kXorPrevious);
  EXPECT_TRUE(reader.verify().empty());
  const std::vector<Record> records = read_all(reader);
  ASSERT_EQ(records.size(), 20u);
  for (int64_t i = 0; i < 20; ++i) expect_known(records[static_cast<size_t>(i)], i);
}

TEST(ExplogLog, MergeYieldsRecordsOfSeveralLogsInWallTimeOrder) {
  TempDir a, b;
  LogSchema schema;
  schema.run_id = "merge";
  schema.columns = {{"x", DType::kI32, {}}};
  auto write = [&](const std::string& dir, const std::vector<int64_t>& times, int32_t actor) {
    WriterOptions o = options_for(dir);
    o.chunk_target_bytes = 64;
    LogWriter w(schema, o);
    for (int64_t t : times) {
      Record r;
      r.meta.actor_id = actor;
      r.meta.wall_time_ns = t;
      r.columns = {{}};
      w.append(std::move(r));
    }
  };
  write(a.path(), {0, 2, 4, 6, 8, 10, 12}, 0);
  write(b.path(), {1, 3, 5, 10, 11, 20}, 1);
  LogReader ra(a.path()), rb(b.path());
  MergedCursor merged({&ra, &rb});
  std::vector<int64_t> times;
  std::vector<size_t> sources;
  size_t source = 0;
  while (std::optional<Record> r = merged.next(&source)) {
    times.push_back(r->meta.wall_time_ns);
    sources.push_back(source);
    EXPECT_EQ(static_cast<size_t>(r->meta.actor_id), source);
  }
  EXPECT_EQ(times, (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 8, 10, 10, 11, 12, 20}));
  EXPECT_EQ(sources, (std::vector<size_t>{0, 1, 0, 1, 0, 1, 0, 0, 0, 1, 1, 0, 1}));
}

TEST(ExplogLog, UnwritableDirectoryAtConstructionThrowsNamingThePath) {
  TempDir dir;
  const std::string blocker = dir.sub("a-file");
  std::ofstream(blocker) << "x";
  const std::string target = blocker + "/log";
  try {
    LogWriter w(known_schema(), options_for(target));
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(target), std::string::npos) << e.what();
  }
}

TEST(ExplogLog, RecordThatDoesNotMatchTheSchemaIsRejected) {
  TempDir dir;
  LogWriter w(known_schema(), options_for(dir.path()));
  Record r = known_record(2);
  r.columns.pop_back();
  EXPECT_THROW(w.append(std::move(r)), std::invalid_argument);
  EXPECT_EQ(w.stats().appended, 0u);
}

TEST(ExplogLog, AppendAfterCloseIsLostNotDropped) {
  TempDir dir;
  LogWriter w(known_schema(), options_for(dir.path()));
  w.close();
  EXPECT_FALSE(w.append(known_record(1)));
  EXPECT_FALSE(w.flush());
  // "dropped" is for a full queue only.
  EXPECT_EQ(w.stats().dropped, 0u);
  EXPECT_EQ(w.stats().lost, 1u);
  EXPECT_EQ(w.stats().lost_steps, static_cast<uint64_t>(known_record(1).meta.steps));
}

TEST(ExplogLog, ReaderOfAPathWithoutALogThrowsNamingIt) {
  TempDir dir;
  try {
    LogReader reader(dir.path());
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(dir.path()), std::string::npos) << e.what();
  }
  EXPECT_THROW(LogReader(dir.sub("missing")), std::runtime_error);
}

}  // namespace
}  // namespace moonseed::explog
