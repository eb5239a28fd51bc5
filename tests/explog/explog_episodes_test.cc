// Column-wise decoding of experience-log chunks (decode_chunk_data,
// LogReader::read_chunk and scan with a column selection) and the episode
// summaries built on it (explog/episodes.h).
#include "explog/episodes.h"

#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "explog/reader.h"
#include "explog/writer.h"
#include "tests/explog/explog_test_records.h"
#include "tests/explog/explog_test_util.h"

namespace moonseed::explog {
namespace {

using testing::flip_byte;
using testing::known_record;
using testing::known_schema;
using testing::put;
using testing::read_all;
using testing::segment_files;
using testing::TempDir;

// The known schema's columns: obs, action, count, logp, reward.
const std::vector<bool> kActionAndReward = {false, true, false, false, true};

// Writes `records` through a LogWriter into `dir`; chunk_target_bytes 1 makes a chunk per record.
void write_log(const std::string& dir, const LogSchema& schema, const std::vector<Record>& records,
               size_t chunk_target_bytes) {
  WriterOptions o;
  o.directory = dir;
  o.chunk_target_bytes = chunk_target_bytes;
  o.segment_max_bytes = 0;
  o.full_queue = FullQueuePolicy::kBackpressure;
  LogWriter w(schema, o);
  for (const Record& r : records) ASSERT_TRUE(w.append(Record(r)));
  w.close();
  ASSERT_EQ(w.stats().error, "");
}

std::vector<Record> known_records(int64_t count) {
  std::vector<Record> out;
  for (int64_t i = 0; i < count; ++i) out.push_back(known_record(i));
  return out;
}

// `selected` equals `full` in meta and in the columns `columns` selects; the others are empty.
void expect_selected(const Record& selected, const Record& full, const std::vector<bool>& columns) {
  EXPECT_EQ(selected.meta, full.meta);
  ASSERT_EQ(selected.columns.size(), full.columns.size());
  for (size_t c = 0; c < columns.size(); ++c) {
    if (columns[c]) {
      EXPECT_EQ(selected.columns[c], full.columns[c]) << "column " << c;
    } else {
      EXPECT_TRUE(selected.columns[c].empty()) << "column " << c;
    }
  }
}

// The header of the chunk at `offset` of `file`.
ChunkHeader chunk_header_at(const std::string& file, uint64_t offset, size_t column_count) {
  std::ifstream in(file, std::ios::binary);
  const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const uint8_t* p = bytes.data() + offset;
  return decode_chunk_header(p, chunk_header_size(p, column_count), column_count);
}

// ---- column selection ----

TEST(ExplogColumnSelection, SelectedColumnsOfAChunkAreByteEqualToAFullDecodeAndOthersEmpty) {
  for (const char* codec : {"lz4", "none"}) {
    SCOPED_TRACE(codec);
    const LogSchema schema = known_schema(codec);
    const std::vector<Record> records = known_records(9);
    const std::vector<uint8_t> chunk = encode_chunk(schema, records.data(), records.size());
    const size_t hs = chunk_header_size(chunk.data(), schema.columns.size());
    const ChunkHeader h = decode_chunk_header(chunk.data(), hs, schema.columns.size());
    const uint8_t* data = chunk.data() + hs;
    const std::vector<Record> full = decode_chunk_data(schema, h, data, chunk.size() - hs);
    const std::vector<bool> none(schema.columns.size(), false);
    for (const std::vector<bool>& columns : {kActionAndReward, none}) {
      const std::vector<Record> some = decode_chunk_data(schema, h, data, chunk.size() - hs, &columns);
      ASSERT_EQ(some.size(), full.size());
      for (size_t i = 0; i < full.size(); ++i) expect_selected(some[i], full[i], columns);
    }
    const std::vector<bool> all;
    const std::vector<Record> empty_selection = decode_chunk_data(schema, h, data, chunk.size() - hs, &all);
    ASSERT_EQ(empty_selection.size(), full.size());
    for (size_t i = 0; i < full.size(); ++i) EXPECT_EQ(empty_selection[i].columns, full[i].columns);
  }
}

TEST(ExplogColumnSelection, ReaderScanAndReadChunkDecodeOnlyTheSelectedColumns) {
  TempDir dir;
  write_log(dir.path(), known_schema(), known_records(40), 512);
  LogReader reader(dir.path());
  ASSERT_GE(reader.chunks().size(), 3u);
  const std::vector<Record> full = read_all(reader);
  ASSERT_EQ(full.size(), 40u);

  RecordCursor cursor = reader.scan({}, kActionAndReward);
  std::vector<Record> some;
  while (std::optional<Record> r = cursor.next()) some.push_back(std::move(*r));
  EXPECT_TRUE(cursor.problems().empty());
  ASSERT_EQ(some.size(), full.size());
  for (size_t i = 0; i < full.size(); ++i) expect_selected(some[i], full[i], kActionAndReward);

  const std::vector<Record> chunk1 = reader.read_chunk(1, kActionAndReward);
  const std::vector<Record> chunk1_full = reader.read_chunk(1);
  ASSERT_EQ(chunk1.size(), chunk1_full.size());
  for (size_t i = 0; i < chunk1.size(); ++i) expect_selected(chunk1[i], chunk1_full[i], kActionAndReward);
}

TEST(ExplogColumnSelection, ACorruptByteInAnUnselectedColumnFailsTheDataChecksumAsToday) {
  TempDir dir;
  write_log(dir.path(), known_schema(), known_records(40), 512);
  const std::string file = segment_files(dir.path())[0];
  std::vector<ChunkRef> chunks = LogReader(file).chunks();
  ASSERT_GE(chunks.size(), 3u);
  const uint64_t offset = chunks[2].summary.offset;
  const ChunkHeader h = chunk_header_at(file, offset, known_schema().columns.size());
  ASSERT_GT(h.blocks[1].stored, 0u);  // block 1 is column 0, "obs": not in kActionAndReward
  flip_byte(file, offset + h.header_size + h.blocks[0].stored);

  LogReader reader(file);
  const std::string message = "chunk 2 at offset " + std::to_string(offset) + " of " + file +
                              ": chunk data checksum mismatch";
  try {
    reader.read_chunk(2, kActionAndReward);
    FAIL() << "no error";
  } catch (const FormatError& e) {
    EXPECT_EQ(std::string(e.what()), message);
  }
  RecordCursor cursor = reader.scan({}, kActionAndReward);
  size_t records = 0;
  while (cursor.next()) ++records;
  EXPECT_EQ(records, 40u - chunks[2].summary.record_count);
  ASSERT_EQ(cursor.problems().size(), 1u);
  EXPECT_EQ(cursor.problems()[0].chunk, 2);
  EXPECT_EQ(cursor.problems()[0].offset, offset);
  EXPECT_EQ(cursor.problems()[0].message, message);

  std::vector<LogProblem> problems;
  summarize_episodes(reader, {}, &problems);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].message, message);
}

// A header (with a good checksum) claiming one more raw byte for the "obs"
// block than the records' steps need fails whether or not "obs" is decoded.
TEST(ExplogColumnSelection, AnUnselectedBlockWhoseSizeDisagreesWithTheStepsStillFails) {
  const LogSchema schema = known_schema();
  const std::vector<Record> records = known_records(6);
  std::vector<uint8_t> chunk = encode_chunk(schema, records.data(), records.size());
  const size_t hs = chunk_header_size(chunk.data(), schema.columns.size());
  uint8_t* obs_raw = chunk.data() + kChunkHeaderFixedSize + 8;  // block 1's raw size
  uint32_t raw = 0;
  std::memcpy(&raw, obs_raw, 4);
  ++raw;
  std::memcpy(obs_raw, &raw, 4);
  const uint32_t crc = crc32c(chunk.data(), hs - 4);
  std::memcpy(chunk.data() + hs - 4, &crc, 4);
  const ChunkHeader h = decode_chunk_header(chunk.data(), hs, schema.columns.size());

  EXPECT_THROW(decode_chunk_data(schema, h, chunk.data() + hs, chunk.size() - hs), FormatError);
  try {
    decode_chunk_data(schema, h, chunk.data() + hs, chunk.size() - hs, &kActionAndReward);
    FAIL() << "no error";
  } catch (const FormatError& e) {
    EXPECT_EQ(std::string(e.what()), "column 'obs' block is " + std::to_string(raw) +
                                         " bytes, its records' steps need " + std::to_string(raw - 1));
  }
}

TEST(ExplogColumnSelection, ASelectionOfTheWrongSizeIsACallerError) {
  TempDir dir;
  write_log(dir.path(), known_schema(), known_records(4), 512);
  LogReader reader(dir.path());
  const std::vector<bool> two = {true, false};
  EXPECT_THROW(reader.scan({}, two), std::invalid_argument);
  EXPECT_THROW(reader.read_chunk(0, two), std::invalid_argument);
}

// ---- episodes ----

LogSchema episode_schema() {
  LogSchema s;
  s.run_id = "episodes";
  s.columns = {{"obs", DType::kU8, {2}}, {"reward", DType::kF32, {}}};
  return s;
}

// A record of `rewards.size()` steps whose obs bytes are the step indices.
Record step_record(int32_t actor, int64_t episode, int64_t first_step, uint8_t flags, int64_t wall_time_ns,
                   const std::vector<float>& rewards) {
  Record r;
  r.meta.actor_id = actor;
  r.meta.env_id = 100 + actor;
  r.meta.episode_id = episode;
  r.meta.first_step = first_step;
  r.meta.steps = static_cast<int32_t>(rewards.size());
  r.meta.flags = flags;
  r.meta.wall_time_ns = wall_time_ns;
  r.columns.resize(2);
  for (size_t t = 0; t < rewards.size(); ++t) {
    r.columns[0].push_back(static_cast<uint8_t>(t));
    r.columns[0].push_back(static_cast<uint8_t>(t + 1));
    put<float>(r.columns[1], rewards[t]);
  }
  return r;
}

// Three actors, interleaved: actor 0's episode 10 spans two records and is
// terminated, actor 1's episode 20 is truncated, actor 2's episode 30 started
// before the log and is still open, actor 0's episode 11 ends without either
// flag, and actor 1 also has an episode 10 (a different episode: other actor).
std::vector<Record> interleaved_episodes() {
  return {
      step_record(0, 10, 0, kIsFirst, 1000, {1.0f, 0.5f, 0.25f}),
      step_record(1, 20, 0, kIsFirst, 1100, {2.0f, 2.0f}),
      step_record(0, 10, 3, kIsLast | kTerminated, 1200, {-1.0f, 0.5f}),
      step_record(2, 30, 5, 0, 1300, {0.25f, 0.25f, 0.25f, 0.25f}),
      step_record(1, 20, 2, kIsLast | kTruncated, 1400, {3.0f}),
      step_record(2, 30, 9, 0, 1500, {0.25f}),
      step_record(0, 11, 0, kIsFirst | kIsLast, 1600, {7.0f}),
      step_record(1, 10, 0, kIsFirst, 1700, {4.0f, 4.0f}),
  };
}

struct ExpectedEpisode {
  int32_t actor;
  int64_t episode;
  int64_t first_step;
  int64_t steps;
  double total_reward;
  bool has_first;
  uint8_t last_flags;
  const char* end;
  int64_t first_wall_time_ns;
  int64_t last_wall_time_ns;
};

void expect_episodes(const std::vector<EpisodeSummary>& got, const std::vector<ExpectedEpisode>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    SCOPED_TRACE("episode " + std::to_string(i));
    const EpisodeSummary& e = got[i];
    const ExpectedEpisode& w = want[i];
    EXPECT_EQ(e.actor_id, w.actor);
    EXPECT_EQ(e.env_id, 100 + w.actor);
    EXPECT_EQ(e.episode_id, w.episode);
    EXPECT_EQ(e.first_step, w.first_step);
    EXPECT_EQ(e.steps, w.steps);
    EXPECT_EQ(e.total_reward, w.total_reward);
    EXPECT_EQ(e.has_first, w.has_first);
    EXPECT_EQ(e.last_flags, w.last_flags);
    EXPECT_STREQ(episode_end(e), w.end);
    EXPECT_EQ(e.first_wall_time_ns, w.first_wall_time_ns);
    EXPECT_EQ(e.last_wall_time_ns, w.last_wall_time_ns);
  }
}

TEST(ExplogEpisodes, InterleavedRecordsGroupIntoEpisodesWithExactStepsReturnsEndsAndTimes) {
  for (const size_t chunk_target_bytes : {size_t{1}, size_t{1} << 20}) {  // a chunk per record, or one
    SCOPED_TRACE(chunk_target_bytes);
    TempDir dir;
    write_log(dir.path(), episode_schema(), interleaved_episodes(), chunk_target_bytes);
    LogReader reader(dir.path());
    std::vector<LogProblem> problems;
    expect_episodes(summarize_episodes(reader, {}, &problems),
                    {
                        {0, 10, 0, 5, 1.25, true, kIsLast | kTerminated, "terminated", 1000, 1200},
                        {1, 20, 0, 3, 7.0, true, kIsLast | kTruncated, "truncated", 1100, 1400},
                        {2, 30, 5, 5, 1.25, false, 0, "open", 1300, 1500},
                        {0, 11, 0, 1, 7.0, true, kIsFirst | kIsLast, "ended", 1600, 1600},
                        {1, 10, 0, 2, 8.0, true, 0, "open", 1700, 1700},
                    });
    EXPECT_TRUE(problems.empty());
  }
}

TEST(ExplogEpisodes, AFilterKeepsOnlyItsRecordsAndTheIndexSkipsOtherChunks) {
  TempDir dir;
  write_log(dir.path(), episode_schema(), interleaved_episodes(), 1);
  LogReader reader(dir.path());
  ASSERT_EQ(reader.chunks().size(), 8u);
  RecordFilter actor1;
  actor1.actor_id = 1;
  expect_episodes(summarize_episodes(reader, actor1),
                  {
                      {1, 20, 0, 3, 7.0, true, kIsLast | kTruncated, "truncated", 1100, 1400},
                      {1, 10, 0, 2, 8.0, true, 0, "open", 1700, 1700},
                  });
  EXPECT_EQ(reader.chunks_decoded(), 3u);

  // From wall time 1200 on, actor 0's episode 10 is only its second record.
  RecordFilter late;
  late.min_wall_time_ns = 1200;
  late.actor_id = 0;
  expect_episodes(summarize_episodes(reader, late),
                  {
                      {0, 10, 3, 2, -0.5, false, kIsLast | kTerminated, "terminated", 1200, 1200},
                      {0, 11, 0, 1, 7.0, true, kIsFirst | kIsLast, "ended", 1600, 1600},
                  });
}

TEST(ExplogEpisodes, AnEnvRewardColumnGivesTheEnvsOwnReturnAndWithoutOneItIsTheRewardsSum) {
  // The rewards were shaped to 3 * the env's + 1 per step.
  LogSchema schema = episode_schema();
  schema.columns.push_back({"env_reward", DType::kF32, {}});
  EXPECT_EQ(env_reward_column(schema), std::optional<size_t>(2));
  EXPECT_FALSE(env_reward_column(episode_schema()).has_value());
  std::vector<Record> records = interleaved_episodes();
  for (Record& r : records) {
    r.columns.emplace_back();
    for (int32_t t = 0; t < r.meta.steps; ++t) {
      float shaped;
      std::memcpy(&shaped, r.columns[1].data() + t * sizeof shaped, sizeof shaped);
      put<float>(r.columns[2], (shaped - 1) / 3);
    }
  }
  TempDir dir;
  write_log(dir.path(), schema, records, 1);
  LogReader reader(dir.path());
  const std::vector<EpisodeSummary> episodes = summarize_episodes(reader);
  ASSERT_EQ(episodes.size(), 5u);
  for (const EpisodeSummary& e : episodes) {
    EXPECT_NEAR(e.env_return, (e.total_reward - static_cast<double>(e.steps)) / 3, 1e-6) << e.episode_id;
  }
  EXPECT_DOUBLE_EQ(episodes[0].total_reward, 1.25);
  EXPECT_NEAR(episodes[0].env_return, (1.25 - 5) / 3, 1e-6);

  TempDir plain;
  write_log(plain.path(), episode_schema(), interleaved_episodes(), 1);
  LogReader plain_reader(plain.path());
  for (const EpisodeSummary& e : summarize_episodes(plain_reader)) EXPECT_EQ(e.env_return, e.total_reward);
}

TEST(ExplogEpisodes, ALogWithoutARewardColumnHasZeroReturns) {
  LogSchema schema = episode_schema();
  schema.columns.pop_back();
  EXPECT_FALSE(reward_column(schema).has_value());
  EXPECT_EQ(reward_column(episode_schema()), std::optional<size_t>(1));
  std::vector<Record> records = interleaved_episodes();
  for (Record& r : records) r.columns.pop_back();
  TempDir dir;
  write_log(dir.path(), schema, records, 1);
  LogReader reader(dir.path());
  const std::vector<EpisodeSummary> episodes = summarize_episodes(reader);
  ASSERT_EQ(episodes.size(), 5u);
  for (const EpisodeSummary& e : episodes) EXPECT_EQ(e.total_reward, 0.0) << e.episode_id;
  EXPECT_EQ(episodes[0].steps, 5);
  EXPECT_STREQ(episode_end(episodes[0]), "terminated");
}

TEST(ExplogValues, EveryDtypeReadsAsTheDoubleOfItsLittleEndianValue) {
  std::vector<uint8_t> b;
  b.push_back(200);
  EXPECT_EQ(value_as_double(DType::kU8, b.data()), 200.0);
  b.clear();
  put<int32_t>(b, -123456);
  EXPECT_EQ(value_as_double(DType::kI32, b.data()), -123456.0);
  b.clear();
  put<int64_t>(b, std::numeric_limits<int64_t>::min());
  EXPECT_EQ(value_as_double(DType::kI64, b.data()), -9223372036854775808.0);
  b.clear();
  put<float>(b, 0.1f);
  EXPECT_EQ(value_as_double(DType::kF32, b.data()), static_cast<double>(0.1f));
  b.clear();
  put<double>(b, -2.5e300);
  EXPECT_EQ(value_as_double(DType::kF64, b.data()), -2.5e300);
}

}  // namespace
}  // namespace moonseed::explog
