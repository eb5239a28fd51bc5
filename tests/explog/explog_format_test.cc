#include "explog/format.h"

#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "tests/explog/explog_test_records.h"

namespace moonseed::explog {
namespace {

using testing::known_record;
using testing::known_schema;

uint64_t le64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = v << 8 | p[i];
  return v;
}

uint32_t le32(const uint8_t* p) { return static_cast<uint32_t>(le64(p) & 0xFFFFFFFFu); }

TEST(ExplogCrc32c, MatchesTheStandardCheckValues) {
  const std::string digits = "123456789";
  EXPECT_EQ(crc32c(digits.data(), digits.size()), 0xE3069283u);
  const std::vector<uint8_t> zeros(32, 0x00), ones(32, 0xFF);  // RFC 3720 B.4
  EXPECT_EQ(crc32c(zeros.data(), zeros.size()), 0x8A9136AAu);
  EXPECT_EQ(crc32c(ones.data(), ones.size()), 0x62A8AB43u);
}

TEST(ExplogCrc32c, ContinuesAnEarlierResult) {
  const std::string text = "experience log";
  EXPECT_EQ(crc32c(text.data() + 5, text.size() - 5, crc32c(text.data(), 5)),
            crc32c(text.data(), text.size()));
}

TEST(ExplogCrc32c, FastPathEqualsThePortableTableAtEveryLengthAndAlignment) {
  std::vector<uint8_t> bytes(4096 + 16);
  uint32_t x = 12345;
  for (uint8_t& b : bytes) {
    x = x * 1103515245u + 12345u;
    b = static_cast<uint8_t>(x >> 16);
  }
  for (size_t offset = 0; offset < 8; ++offset) {
    for (size_t size : {size_t{0}, size_t{1}, size_t{7}, size_t{8}, size_t{9}, size_t{63}, size_t{64},
                        size_t{1000}, size_t{4096}}) {
      EXPECT_EQ(crc32c(bytes.data() + offset, size), crc32c_portable(bytes.data() + offset, size))
          << "offset " << offset << " size " << size;
      EXPECT_EQ(crc32c(bytes.data() + offset, size, 0xDEADBEEF),
                crc32c_portable(bytes.data() + offset, size, 0xDEADBEEF));
    }
  }
  EXPECT_EQ(crc32c_portable("123456789", 9), 0xE3069283u);
}

TEST(ExplogFormat, FileHeaderRoundTripsTheSchema) {
  LogSchema schema = known_schema();
  schema.columns[0].filter = ColumnFilter::kXorPrevious;
  const std::vector<uint8_t> bytes = encode_file_header(schema);
  ASSERT_EQ(file_header_size(bytes.data()), bytes.size());
  EXPECT_EQ(std::memcmp(bytes.data(), "MSEXPLOG", 8), 0);
  EXPECT_EQ(le32(bytes.data() + 8), 2u);
  const LogSchema back = decode_file_header(bytes.data(), bytes.size());
  EXPECT_EQ(back.run_id, schema.run_id);
  EXPECT_EQ(back.spec, schema.spec);
  EXPECT_EQ(back.codec, "lz4");
  EXPECT_TRUE(same_layout(back, schema));
  ASSERT_EQ(back.columns.size(), 5u);
  EXPECT_EQ(back.columns[2].name, "count");
  EXPECT_EQ(back.columns[2].dtype, DType::kI64);
  EXPECT_EQ(back.columns[0].shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(back.columns[0].filter, ColumnFilter::kXorPrevious);
  EXPECT_EQ(back.columns[1].filter, ColumnFilter::kNone);
}

// A version 1 file header, byte by byte as docs/experience-log-format.md
// describes it: no filter byte after each column's shape.
std::vector<uint8_t> version1_header() {
  std::vector<uint8_t> body;
  auto u32 = [&](uint32_t v) { testing::put<uint32_t>(body, v); };
  auto str = [&](const std::string& t) {
    u32(static_cast<uint32_t>(t.size()));
    body.insert(body.end(), t.begin(), t.end());
  };
  str("run-v1");
  str("lz4");
  str("{}");
  u32(2);
  str("frame");
  body.push_back(1);  // u8
  body.push_back(2);  // rank
  testing::put<int64_t>(body, 4);
  testing::put<int64_t>(body, 5);
  str("reward");
  body.push_back(4);  // f32
  body.push_back(0);
  std::vector<uint8_t> out(kFileMagic, kFileMagic + 8);
  testing::put<uint32_t>(out, 1);
  testing::put<uint32_t>(out, static_cast<uint32_t>(body.size()));
  out.insert(out.end(), body.begin(), body.end());
  testing::put<uint32_t>(out, crc32c(out.data(), out.size()));
  return out;
}

TEST(ExplogFormat, AVersionOneFileHeaderIsReadWithoutFilters) {
  const std::vector<uint8_t> bytes = version1_header();
  ASSERT_EQ(file_header_size(bytes.data()), bytes.size());
  const LogSchema back = decode_file_header(bytes.data(), bytes.size());
  EXPECT_EQ(back.run_id, "run-v1");
  ASSERT_EQ(back.columns.size(), 2u);
  EXPECT_EQ(back.columns[0].name, "frame");
  EXPECT_EQ(back.columns[0].shape, (std::vector<int64_t>{4, 5}));
  EXPECT_EQ(back.columns[0].filter, ColumnFilter::kNone);
  EXPECT_EQ(back.columns[1].name, "reward");
  EXPECT_EQ(back.columns[1].dtype, DType::kF32);
}

TEST(ExplogFormat, AnUnknownFilterIsACallerErrorAndACorruptHeader) {
  LogSchema schema = known_schema();
  schema.columns.back().filter = static_cast<ColumnFilter>(7);
  EXPECT_THROW(encode_file_header(schema), std::invalid_argument);
  schema.columns.back().filter = ColumnFilter::kXorPrevious;
  std::vector<uint8_t> bytes = encode_file_header(schema);
  // The filter byte of the last column ("reward", f64, a scalar) ends the body.
  const size_t filter_at = bytes.size() - 4 - 1;
  ASSERT_EQ(bytes[filter_at], 1u);
  bytes[filter_at] = 7;
  const uint32_t crc = crc32c(bytes.data(), bytes.size() - 4);
  std::memcpy(bytes.data() + bytes.size() - 4, &crc, 4);
  try {
    decode_file_header(bytes.data(), bytes.size());
    FAIL() << "an unknown filter was read";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown filter 7"), std::string::npos) << e.what();
  }
}

TEST(ExplogFormat, FileHeaderWithAFlippedByteIsRejected) {
  std::vector<uint8_t> bytes = encode_file_header(known_schema());
  bytes[20] ^= 0x01;
  EXPECT_THROW(decode_file_header(bytes.data(), bytes.size()), FormatError);
  for (const uint8_t v : {0, 3}) {  // this build reads versions 1 and 2
    std::vector<uint8_t> version = encode_file_header(known_schema());
    version[8] = v;
    EXPECT_THROW(file_header_size(version.data()), FormatError) << int{v};
  }
}

// Codec "none" stores blocks as they are, so every byte position is known.
TEST(ExplogFormat, ChunkLayoutMatchesTheDocumentedOffsets) {
  LogSchema schema;
  schema.codec = "none";
  schema.columns = {{"x", DType::kI32, {2}}};
  Record r;
  r.meta.episode_id = 7;
  r.meta.actor_id = 3;
  r.meta.steps = 1;
  r.meta.flags = kIsFirst | kTruncated;
  r.meta.wall_time_ns = 42;
  r.columns = {{1, 0, 0, 0, 2, 0, 0, 0}};
  const std::vector<uint8_t> chunk = encode_chunk(schema, &r, 1);
  // header: 64 fixed + 2 blocks x 8 + 1 actor x 4 + crc 4 = 88; data: 56 meta + 8 column.
  ASSERT_EQ(chunk.size(), 88u + 56u + 8u);
  EXPECT_EQ(std::memcmp(chunk.data(), "MSCK", 4), 0);
  EXPECT_EQ(le32(chunk.data() + 4), 88u);   // header size
  EXPECT_EQ(le32(chunk.data() + 8), 1u);    // records
  EXPECT_EQ(le32(chunk.data() + 12), 2u);   // blocks
  EXPECT_EQ(le64(chunk.data() + 16), 42u);  // min wall time
  EXPECT_EQ(le64(chunk.data() + 32), 7u);   // min episode
  EXPECT_EQ(le64(chunk.data() + 48), 64u);  // data size
  EXPECT_EQ(le32(chunk.data() + 56), crc32c(chunk.data() + 88, 64));
  EXPECT_EQ(le32(chunk.data() + 60), 1u);   // actors
  EXPECT_EQ(le32(chunk.data() + 64), 56u);  // meta block raw
  EXPECT_EQ(le32(chunk.data() + 72), 8u);   // column block raw
  EXPECT_EQ(le32(chunk.data() + 80), 3u);   // actor id
  EXPECT_EQ(le32(chunk.data() + 84), crc32c(chunk.data(), 84));
  const uint8_t* meta = chunk.data() + 88;
  EXPECT_EQ(le64(meta + 0), 7u);                // episode id
  EXPECT_EQ(le64(meta + 16), 42u);              // wall time
  EXPECT_EQ(le32(meta + 40), 3u);               // actor id
  EXPECT_EQ(le32(meta + 48), 1u);               // steps
  EXPECT_EQ(meta[52], kIsFirst | kTruncated);   // flags
  EXPECT_EQ(le32(chunk.data() + 88 + 56 + 4), 2u);
}

TEST(ExplogFormat, ChunkRoundTripsRecordsWithEveryDtype) {
  const LogSchema schema = known_schema();
  std::vector<Record> records;
  for (int i = 0; i < 9; ++i) records.push_back(known_record(i));
  const std::vector<uint8_t> chunk = encode_chunk(schema, records.data(), records.size());
  const size_t hs = chunk_header_size(chunk.data(), schema.columns.size());
  const ChunkHeader h = decode_chunk_header(chunk.data(), hs, schema.columns.size());
  EXPECT_EQ(h.summary.record_count, 9u);
  EXPECT_EQ(h.summary.min_episode_id, -5);  // 0 / 2 - 5
  EXPECT_EQ(h.summary.max_episode_id, -1);  // 8 / 2 - 5
  EXPECT_EQ(h.summary.actor_ids, (std::vector<int32_t>{0, 1, 2}));
  EXPECT_EQ(h.summary.max_wall_time_ns, 1000000008000);
  EXPECT_EQ(h.total_size(), chunk.size());
  const std::vector<Record> back = decode_chunk_data(schema, h, chunk.data() + hs, chunk.size() - hs);
  ASSERT_EQ(back.size(), records.size());
  for (size_t i = 0; i < records.size(); ++i) {
    EXPECT_EQ(back[i].meta, records[i].meta) << i;
    EXPECT_EQ(back[i].columns, records[i].columns) << i;
  }
}

TEST(ExplogChunkBuilder, RefilledBuilderEncodesExactlyWhatEncodeChunkDoes) {
  const LogSchema schema = known_schema();
  std::vector<Record> records;
  for (int i = 0; i < 15; ++i) records.push_back(known_record(i));
  ChunkBuilder builder(schema);
  std::vector<uint8_t> out;
  // Larger chunk first, so that the second encode reuses a longer buffer.
  for (const auto& [begin, end] : {std::pair<size_t, size_t>{0, 11}, {11, 15}, {3, 4}}) {
    builder.clear();
    size_t raw = 0;
    for (size_t i = begin; i < end; ++i) {
      builder.add(records[i]);
      raw += record_raw_bytes(records[i]);
    }
    EXPECT_EQ(builder.record_count(), end - begin);
    EXPECT_EQ(builder.raw_bytes(), raw);
    const ChunkSummary summary = builder.encode(out);
    EXPECT_EQ(out, encode_chunk(schema, records.data() + begin, end - begin)) << begin << ".." << end;
    const size_t hs = chunk_header_size(out.data(), schema.columns.size());
    const ChunkHeader h = decode_chunk_header(out.data(), hs, schema.columns.size());
    EXPECT_EQ(summary, h.summary);
    const std::vector<Record> back = decode_chunk_data(schema, h, out.data() + hs, out.size() - hs);
    ASSERT_EQ(back.size(), end - begin);
    for (size_t i = begin; i < end; ++i) {
      EXPECT_EQ(back[i - begin].meta, records[i].meta) << i;
      EXPECT_EQ(back[i - begin].columns, records[i].columns) << i;
    }
  }
}

TEST(ExplogChunkBuilder, RecordsAddedFromPointersIntoLargerArraysKeepTheirSlices) {
  // A record's columns may point into the middle of arrays holding more steps
  // (the recorder's unrolls): only meta.steps steps are taken from each.
  LogSchema schema = known_schema("none");
  schema.columns = {{"x", DType::kI32, {}}, {"frame", DType::kU8, {3}}};
  std::vector<int32_t> xs = {10, 11, 12, 13, 14, 15};
  std::vector<uint8_t> frames;
  for (int i = 0; i < 18; ++i) frames.push_back(static_cast<uint8_t>(i));
  ChunkBuilder builder(schema);
  RecordMeta meta;
  meta.steps = 2;
  const uint8_t* cols[2] = {reinterpret_cast<const uint8_t*>(xs.data() + 3), frames.data() + 9};
  builder.add(meta, cols);
  std::vector<uint8_t> out;
  builder.encode(out);
  const size_t hs = chunk_header_size(out.data(), 2);
  const ChunkHeader h = decode_chunk_header(out.data(), hs, 2);
  const std::vector<Record> back = decode_chunk_data(schema, h, out.data() + hs, out.size() - hs);
  ASSERT_EQ(back.size(), 1u);
  std::vector<uint8_t> want_x;
  testing::put<int32_t>(want_x, 13);
  testing::put<int32_t>(want_x, 14);
  EXPECT_EQ(back[0].columns[0], want_x);
  EXPECT_EQ(back[0].columns[1], (std::vector<uint8_t>{9, 10, 11, 12, 13, 14}));
}

TEST(ExplogChunkBuilder, FasterLz4SettingsDecodeToTheSameRecords) {
  // Acceleration is the writer's choice only: the chunk reads back with the
  // same decoder, and the data must survive every setting.
  const LogSchema schema = known_schema();
  std::vector<Record> records;
  for (int i = 0; i < 40; ++i) records.push_back(known_record(i));
  ChunkBuilder builder(schema);
  for (const Record& r : records) builder.add(r);
  for (int acceleration : {1, 8, 65537}) {
    std::vector<uint8_t> out;
    builder.encode(out, acceleration);
    const size_t hs = chunk_header_size(out.data(), schema.columns.size());
    const ChunkHeader h = decode_chunk_header(out.data(), hs, schema.columns.size());
    const std::vector<Record> back = decode_chunk_data(schema, h, out.data() + hs, out.size() - hs);
    ASSERT_EQ(back.size(), records.size()) << acceleration;
    for (size_t i = 0; i < records.size(); ++i) {
      EXPECT_EQ(back[i].columns, records[i].columns) << "acceleration " << acceleration << " record " << i;
    }
  }
}

TEST(ExplogChunkBuilder, CallerErrorsAreNamed) {
  const LogSchema schema = known_schema();
  ChunkBuilder builder(schema);
  std::vector<uint8_t> out;
  EXPECT_THROW(builder.encode(out), std::invalid_argument);  // no records
  RecordMeta meta;
  meta.steps = -1;
  const uint8_t* none[5] = {};
  EXPECT_THROW(builder.add(meta, none), std::invalid_argument);
  meta.steps = 2;
  try {
    builder.add(meta, none);
    FAIL() << "a null column with steps was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'obs'"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(builder.empty());
  meta.steps = 0;  // no steps: no bytes to point at
  builder.add(meta, none);
  EXPECT_EQ(builder.record_count(), 1u);
  EXPECT_EQ(builder.raw_bytes(), kMetaRecordSize);
}

// The pointers of a Record's columns, as the recorder hands them over.
std::vector<const uint8_t*> column_pointers(const Record& r) {
  std::vector<const uint8_t*> columns;
  for (const auto& c : r.columns) columns.push_back(c.data());
  return columns;
}

TEST(ExplogChunkBuilder, AReferencedRecordEncodesExactlyAsACopiedOne) {
  for (const std::string codec : {"lz4", "none"}) {
    const LogSchema s = known_schema(codec);
    const Record r = known_record(4);
    const auto keepalive = std::make_shared<int>(0);
    ChunkBuilder referred(s);
    referred.refer(r.meta, column_pointers(r).data(), keepalive);
    EXPECT_EQ(referred.record_count(), 1u);
    EXPECT_EQ(referred.raw_bytes(), record_raw_bytes(r));
    std::vector<uint8_t> out;
    referred.encode(out);
    EXPECT_EQ(out, encode_chunk(s, &r, 1)) << codec;
  }
}

TEST(ExplogChunkBuilder, AReferencedRecordsMemoryIsHeldUntilClear) {
  const LogSchema schema = known_schema();
  auto unroll = std::make_shared<Record>(known_record(3));
  const std::weak_ptr<Record> watch = unroll;
  ChunkBuilder builder(schema);
  builder.refer(unroll->meta, column_pointers(*unroll).data(), unroll);
  unroll.reset();
  EXPECT_FALSE(watch.expired());
  std::vector<uint8_t> out;
  builder.encode(out);
  EXPECT_FALSE(watch.expired()) << "encoding does not release it: clear() does";
  builder.clear();
  EXPECT_TRUE(watch.expired());
  EXPECT_TRUE(builder.empty());
}

TEST(ExplogChunkBuilder, AReferencedRecordIsItsChunksOnlyRecord) {
  const LogSchema schema = known_schema();
  const Record a = known_record(3), b = known_record(4);
  const auto keepalive = std::make_shared<int>(0);
  ChunkBuilder builder(schema);
  builder.add(a);
  EXPECT_THROW(builder.refer(b.meta, column_pointers(b).data(), keepalive), std::logic_error);
  EXPECT_EQ(builder.record_count(), 1u);
  builder.clear();
  EXPECT_THROW(builder.refer(b.meta, column_pointers(b).data(), nullptr), std::invalid_argument);
  builder.refer(b.meta, column_pointers(b).data(), keepalive);
  EXPECT_THROW(builder.add(a), std::logic_error);
  EXPECT_THROW(builder.refer(a.meta, column_pointers(a).data(), keepalive), std::logic_error);
  EXPECT_EQ(builder.record_count(), 1u);
  builder.clear();
  builder.add(a);  // a cleared builder copies again
  EXPECT_EQ(builder.record_count(), 1u);
}

TEST(ExplogChunkBuilder, EncodeIntoAReusedBufferNeverShrinksItAndWritesTheSameChunk) {
  const LogSchema schema = known_schema();
  ChunkBuilder big(schema), small(schema);
  for (int i = 0; i < 30; ++i) big.add(known_record(i));
  small.add(known_record(4));
  std::vector<uint8_t> buffer;
  ChunkSummary summary;
  const size_t big_size = big.encode_into(buffer, 1, &summary);
  EXPECT_GE(buffer.size(), big_size);
  EXPECT_EQ(summary.record_count, 30u);
  const size_t capacity = buffer.size();
  const size_t small_size = small.encode_into(buffer, 1, &summary);
  EXPECT_LT(small_size, big_size);
  EXPECT_EQ(buffer.size(), capacity) << "a smaller chunk must not shrink the buffer";
  EXPECT_EQ(summary.record_count, 1u);
  std::vector<uint8_t> exact;
  small.encode(exact);
  EXPECT_EQ(std::vector<uint8_t>(buffer.begin(), buffer.begin() + static_cast<ptrdiff_t>(small_size)), exact);
}

TEST(ExplogChunkFilter, XorPreviousStoresEachStepAfterARecordsFirstXoredWithTheOneBefore) {
  // Codec none: the stored block is the filtered bytes, checkable by hand.
  LogSchema schema = known_schema("none");
  schema.columns[0].filter = ColumnFilter::kXorPrevious;  // obs: u8 [2, 3], 6 bytes a step
  const Record a = known_record(3), b = known_record(4);  // 3 and 4 steps
  ChunkBuilder builder(schema);
  builder.add(a);
  builder.add(b);
  std::vector<uint8_t> out;
  builder.encode(out);
  const size_t hs = chunk_header_size(out.data(), schema.columns.size());
  const ChunkHeader h = decode_chunk_header(out.data(), hs, schema.columns.size());
  std::vector<uint8_t> want;
  for (const Record* r : {&a, &b}) {
    const std::vector<uint8_t>& x = r->columns[0];
    for (size_t i = 0; i < x.size(); ++i) want.push_back(i < 6 ? x[i] : static_cast<uint8_t>(x[i] ^ x[i - 6]));
  }
  const uint8_t* obs_block = out.data() + hs + h.blocks[0].stored;
  ASSERT_EQ(h.blocks[1].stored, want.size());
  EXPECT_EQ(std::vector<uint8_t>(obs_block, obs_block + want.size()), want);
  EXPECT_NE(want, [&] {
    std::vector<uint8_t> plain = a.columns[0];
    plain.insert(plain.end(), b.columns[0].begin(), b.columns[0].end());
    return plain;
  }()) << "the records must have changing steps for this test to mean anything";
}

TEST(ExplogChunkFilter, FilteredColumnsReadBackAsWrittenWhetherCopiedOrReferenced) {
  for (const std::string codec : {"lz4", "none"}) {
    LogSchema schema = known_schema(codec);
    for (ColumnSpec& c : schema.columns) c.filter = ColumnFilter::kXorPrevious;  // every dtype
    std::vector<Record> records;
    for (int i = 0; i < 12; ++i) records.push_back(known_record(i));  // 0 to 4 steps
    ChunkBuilder copied(schema);
    for (const Record& r : records) copied.add(r);
    std::vector<uint8_t> out;
    copied.encode(out);
    const size_t hs = chunk_header_size(out.data(), schema.columns.size());
    const ChunkHeader h = decode_chunk_header(out.data(), hs, schema.columns.size());
    const std::vector<Record> back = decode_chunk_data(schema, h, out.data() + hs, out.size() - hs);
    ASSERT_EQ(back.size(), records.size());
    for (size_t i = 0; i < records.size(); ++i) EXPECT_EQ(back[i].columns, records[i].columns) << codec << " " << i;

    const Record& big = records[9];
    ChunkBuilder referred(schema);
    referred.refer(big.meta, column_pointers(big).data(), std::make_shared<int>(0));
    referred.encode(out);
    EXPECT_EQ(out, encode_chunk(schema, &big, 1)) << codec;
  }
}

TEST(ExplogFormat, ChunkDataWithAFlippedByteFailsItsChecksum) {
  const LogSchema schema = known_schema();
  const Record r = known_record(4);
  std::vector<uint8_t> chunk = encode_chunk(schema, &r, 1);
  const size_t hs = chunk_header_size(chunk.data(), schema.columns.size());
  const ChunkHeader h = decode_chunk_header(chunk.data(), hs, schema.columns.size());
  chunk[hs + 3] ^= 0x40;
  try {
    decode_chunk_data(schema, h, chunk.data() + hs, chunk.size() - hs);
    FAIL() << "no error";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("data checksum"), std::string::npos) << e.what();
  }
  chunk[hs - 10] ^= 0x01;  // inside the block sizes
  EXPECT_THROW(decode_chunk_header(chunk.data(), hs, schema.columns.size()), FormatError);
}

// Decodes a whole chunk the way a reader does; throws FormatError when it is bad.
std::vector<Record> decode_whole_chunk(const LogSchema& schema, const std::vector<uint8_t>& chunk) {
  const size_t ncols = schema.columns.size();
  if (chunk.size() < kChunkHeaderFixedSize) throw FormatError("short");
  const size_t hs = chunk_header_size(chunk.data(), ncols);
  if (hs > chunk.size()) throw FormatError("short header");
  const ChunkHeader h = decode_chunk_header(chunk.data(), hs, ncols);
  if (h.total_size() != chunk.size()) throw FormatError("size");
  return decode_chunk_data(schema, h, chunk.data() + hs, chunk.size() - hs);
}

// CRC-32C detects every single-bit error, so no flipped bit may decode.
TEST(ExplogFormat, EveryFlippedBitOfAChunkIsDetected) {
  const LogSchema schema = known_schema();
  std::vector<Record> records = {known_record(3), known_record(4)};
  const std::vector<uint8_t> chunk = encode_chunk(schema, records.data(), records.size());
  ASSERT_EQ(decode_whole_chunk(schema, chunk).size(), 2u);
  for (size_t byte = 0; byte < chunk.size(); ++byte) {
    for (int bit = 0; bit < 8; ++bit) {
      std::vector<uint8_t> bad = chunk;
      bad[byte] ^= static_cast<uint8_t>(1u << bit);
      EXPECT_THROW(decode_whole_chunk(schema, bad), FormatError) << "byte " << byte << " bit " << bit;
    }
  }
}

// A small fuzz pass: garbage behind a valid magic, or a valid header over
// garbage data, fails with FormatError and nothing else.
TEST(ExplogFormat, GarbageChunksFailWithFormatErrorOnly) {
  const LogSchema schema = known_schema();
  const Record r = known_record(4);
  const std::vector<uint8_t> chunk = encode_chunk(schema, &r, 1);
  uint64_t state = 12345;
  auto next_byte = [&] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<uint8_t>(state >> 56);
  };
  for (int round = 0; round < 2000; ++round) {
    std::vector<uint8_t> bad = chunk;
    const size_t from = round % 2 == 0 ? 4 : chunk.size() / 2;
    for (size_t i = from; i < bad.size(); ++i) bad[i] = next_byte();
    bad.resize(from + next_byte() % (bad.size() - from + 1));
    EXPECT_THROW(decode_whole_chunk(schema, bad), FormatError) << "round " << round;
  }
}

TEST(ExplogFormat, ChunkForAnotherColumnCountIsRejected) {
  const Record r = known_record(1);
  const std::vector<uint8_t> chunk = encode_chunk(known_schema(), &r, 1);
  EXPECT_THROW(chunk_header_size(chunk.data(), 4), FormatError);
}

TEST(ExplogFormat, FooterRoundTripsTheIndex) {
  ChunkSummary a{100, 3, 10, 20, -4, 9, {0, 5}};
  ChunkSummary b{400, 1, 30, 30, 9, 9, {-2}};
  const std::vector<uint8_t> bytes = encode_footer({a, b}, 900);
  // magic 4 + count 4 + records 8 + entries (48 + 4 actors) + trailer 20
  ASSERT_EQ(bytes.size(), 16u + 56u + 52u + 20u);
  const std::optional<Trailer> trailer = decode_trailer(bytes.data() + bytes.size() - kTrailerSize);
  ASSERT_TRUE(trailer.has_value());
  EXPECT_EQ(trailer->footer_offset, 900u);
  const std::vector<ChunkSummary> back =
      decode_footer(bytes.data(), bytes.size() - kTrailerSize, *trailer);
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[0], a);
  EXPECT_EQ(back[1], b);
  EXPECT_FALSE(decode_trailer(bytes.data()).has_value());
}

TEST(ExplogFormat, RecordOfTheWrongSizeNamesTheColumn) {
  Record r = known_record(3);
  r.columns[3].pop_back();
  try {
    validate_record(known_schema(), r);
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'logp'"), std::string::npos) << e.what();
  }
}

TEST(ExplogFormat, UnknownDtypeOrCodecIsACallerError) {
  EXPECT_EQ(dtype_from_name("f64"), DType::kF64);
  EXPECT_THROW(dtype_from_name("f16"), std::invalid_argument);
  LogSchema s = known_schema("zstd");
  EXPECT_THROW(validate_schema(s), std::invalid_argument);
}

}  // namespace
}  // namespace moonseed::explog
