// The experience log's on-disk format (docs/experience-log-format.md is the
// byte-level description; this file is its one implementation in C++): the
// data model (schema, record), CRC-32C, and encode/decode of the file header,
// chunks, and the footer with its index.
//
// A log is a directory of segment files. A segment is
//   file header | chunk* | [footer + trailer]   (footer only after a clean close)
// A chunk holds one or more records (unrolls) column by column: first all the
// records' meta as one block, then each schema column concatenated over the
// chunk's records; every block is compressed on its own (codec "lz4": LZ4
// block format, or "none"). The chunk header carries the block sizes, the
// chunk's index summary and two CRC-32Cs (header, data), so a reader can
// check and skip a chunk without touching its data.
//
// Failure: decoders throw FormatError (a std::runtime_error) saying what is
// wrong ("header checksum mismatch", "block 2 decompresses to 10 bytes, header
// says 12"); callers add the file and offset. Invalid schemas and records are
// caller bugs: std::invalid_argument naming the column and the sizes.
// Thread-safety: pure functions, safe from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace moonseed::explog {

// Written: 2 (per-column filters in the file header). Read: 1 and 2; a
// version 1 file has no filters.
constexpr uint32_t kFormatVersion = 2;
constexpr uint32_t kOldestFormatVersion = 1;
constexpr char kFileMagic[8] = {'M', 'S', 'E', 'X', 'P', 'L', 'O', 'G'};
constexpr char kChunkMagic[4] = {'M', 'S', 'C', 'K'};
constexpr char kFooterMagic[4] = {'M', 'S', 'F', 'T'};
constexpr char kTrailerMagic[8] = {'M', 'S', 'E', 'X', 'P', 'E', 'N', 'D'};

constexpr size_t kFileHeaderPrefixSize = 16;   // magic, version, body size
constexpr size_t kChunkHeaderFixedSize = 64;   // up to and including the actor count
constexpr size_t kMetaRecordSize = 56;         // one RecordMeta in the meta block
constexpr size_t kTrailerSize = 20;            // footer offset, footer CRC, magic
// Decoders refuse larger values before allocating: a corrupt size field must
// not turn into a huge allocation.
constexpr uint32_t kMaxFileHeaderBody = 16u << 20;
constexpr uint32_t kMaxBlockSize = 0x7E000000;  // LZ4_MAX_INPUT_SIZE

class FormatError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class DType : uint8_t { kU8 = 1, kI32 = 2, kI64 = 3, kF32 = 4, kF64 = 5 };

size_t dtype_size(DType dtype);
const char* dtype_name(DType dtype);  // "u8", "i32", "i64", "f32", "f64"
// Throws std::invalid_argument naming `name`.
DType dtype_from_name(const std::string& name);
// One value of `dtype` (dtype_size(dtype) little-endian bytes at `data`) as a
// double: exact for u8, i32, f32, f64 and integers up to 2^53; an i64 beyond
// is rounded to the nearest double. Never throws.
double value_as_double(DType dtype, const uint8_t* data);

// How a column's bytes are transformed in its chunk block before the codec
// (and back after it). Readers always see the original values.
enum class ColumnFilter : uint8_t {
  kNone = 0,
  // Each step of a record after its first is stored XORed, byte by byte, with
  // the record's step before it: pixels that do not change between steps
  // become zeros, which LZ4 compresses faster and smaller.
  kXorPrevious = 1,
};
const char* filter_name(ColumnFilter filter);  // "none", "xor_previous"

// One per-step column: every record holds steps x prod(shape) values of dtype.
struct ColumnSpec {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;  // per step; {} is a scalar per step
  ColumnFilter filter = ColumnFilter::kNone;

  size_t step_bytes() const;  // prod(shape) * dtype_size
};

struct LogSchema {
  std::string run_id;
  std::string spec;           // free-form (JSON) text from the caller: observation/action specs
  std::string codec = "lz4";  // "lz4" or "none"
  std::vector<ColumnSpec> columns;
};

// Throws std::invalid_argument for an unknown codec or filter, an empty or
// duplicate column name, a negative dimension or more than 255 dimensions.
void validate_schema(const LogSchema& schema);
// Same columns (names, dtypes, shapes): the records of one are records of the
// other. Codec and filters may differ: they are how a segment stores its
// chunks, and each segment is decoded with its own.
bool same_layout(const LogSchema& a, const LogSchema& b);

// RecordMeta::flags bits.
constexpr uint8_t kIsFirst = 1;     // the unroll starts its episode
constexpr uint8_t kIsLast = 2;      // the unroll ends its episode
constexpr uint8_t kTerminated = 4;  // ... by termination
constexpr uint8_t kTruncated = 8;   // ... by truncation (time limit)

// One unroll's identity and provenance.
struct RecordMeta {
  int32_t actor_id = 0;
  int32_t env_id = 0;
  int64_t episode_id = 0;
  int64_t first_step = 0;  // step index within the episode of the unroll's first step
  int32_t steps = 0;
  uint8_t flags = 0;
  int64_t wall_time_ns = 0;
  int64_t learner_step = 0;
  uint64_t config_version = 0;

  bool operator==(const RecordMeta& o) const;
};

// One unroll: columns[i] holds meta.steps x schema.columns[i].step_bytes()
// bytes, little-endian values.
struct Record {
  RecordMeta meta;
  std::vector<std::vector<uint8_t>> columns;
};

// Throws std::invalid_argument naming the column and the expected and actual
// byte counts, or a negative step count.
void validate_record(const LogSchema& schema, const Record& record);
// Meta plus column bytes: what a record costs in a chunk before compression.
size_t record_raw_bytes(const Record& record);

// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), as in iSCSI and ext4.
// `crc` continues an earlier result: crc32c(ab) == crc32c(b, crc32c(a)).
// Uses the CPU's crc32 instruction where there is one (x86-64 with SSE4.2).
uint32_t crc32c(const void* data, size_t size, uint32_t crc = 0);
// The table-driven version, on every CPU (crc32c's reference in tests).
uint32_t crc32c_portable(const void* data, size_t size, uint32_t crc = 0);

// ---- file header ----
std::vector<uint8_t> encode_file_header(const LogSchema& schema);
// From the first kFileHeaderPrefixSize bytes: the size of the whole header
// (prefix, body, CRC). Checks the magic and the version.
size_t file_header_size(const uint8_t* prefix);
// `data` holds the whole header (file_header_size bytes).
LogSchema decode_file_header(const uint8_t* data, size_t size);

// ---- chunks ----
// What the index knows about a chunk (the same fields are in its header).
struct ChunkSummary {
  uint64_t offset = 0;  // of the chunk header in its file (not stored in the chunk header)
  uint32_t record_count = 0;
  int64_t min_wall_time_ns = 0;
  int64_t max_wall_time_ns = 0;
  int64_t min_episode_id = 0;
  int64_t max_episode_id = 0;
  std::vector<int32_t> actor_ids;  // distinct, ascending

  bool has_actor(int32_t actor_id) const;
  bool operator==(const ChunkSummary& o) const;
};

struct BlockSize {
  uint32_t raw = 0;     // uncompressed
  uint32_t stored = 0;  // as stored in the file
};

struct ChunkHeader {
  ChunkSummary summary;
  uint32_t header_size = 0;  // whole header including its CRC
  uint64_t data_size = 0;    // sum of blocks[].stored
  uint32_t data_crc = 0;
  std::vector<BlockSize> blocks;  // meta block first, then one per schema column

  uint64_t total_size() const { return header_size + data_size; }
};

// Builds one chunk record by record: each record's meta and column bytes are
// copied once, straight into the chunk's blocks, and encode() compresses the
// blocks into the chunk. clear() keeps the buffers' capacity, so a builder
// that is refilled again and again stops allocating.
// A record large enough to be a chunk of its own can instead be referenced
// (refer): its column bytes are compressed where they are, never copied, and
// `keepalive` holds their memory until clear().
// Thread-safety: one thread at a time; `schema` must outlive the builder.
class ChunkBuilder {
 public:
  explicit ChunkBuilder(const LogSchema& schema);

  // Appends one record: columns[c] points at meta.steps x schema.columns[c].step_bytes()
  // bytes (little-endian values). Throws std::invalid_argument for a negative
  // step count or a null column with steps to copy, std::logic_error after refer().
  void add(const RecordMeta& meta, const uint8_t* const* columns);
  // The same from a Record (validate_record's errors).
  void add(const Record& record);
  // Makes the chunk this one record, its columns as for add() but referenced:
  // the bytes must stay unchanged while `keepalive` is held, which is until
  // clear(). Throws std::logic_error unless the builder is empty, and
  // add()'s std::invalid_argument; nothing may be added until clear().
  void refer(const RecordMeta& meta, const uint8_t* const* columns, std::shared_ptr<const void> keepalive);

  size_t record_count() const { return record_steps_.size(); }
  uint64_t step_count() const;  // of every record so far
  bool empty() const { return record_steps_.empty(); }
  // Meta plus column bytes so far: what the chunk holds before compression.
  size_t raw_bytes() const { return raw_bytes_; }

  // Writes the chunk, header and data, into `out` (its contents replaced; its
  // capacity reused) and returns its summary (offset 0). Throws
  // std::invalid_argument when empty or for a block above kMaxBlockSize.
  // `lz4_acceleration` (codec lz4) trades ratio for speed, as LZ4_compress_fast's
  // (1 = LZ4's default); the format and the decoder do not change with it.
  ChunkSummary encode(std::vector<uint8_t>& out, int lz4_acceleration = 1) const;
  // The same into the first bytes of `buffer`, which grows as needed but is
  // never shrunk, so that a reused buffer is not zero-filled again; returns
  // the chunk's size and sets *summary.
  size_t encode_into(std::vector<uint8_t>& buffer, int lz4_acceleration, ChunkSummary* summary) const;

  void clear();

 private:
  void check_record(const RecordMeta& meta, const uint8_t* const* columns) const;
  void add_meta(const RecordMeta& meta);

  const LogSchema* schema_;
  std::vector<size_t> step_bytes_;             // per column
  std::vector<uint8_t> meta_block_;            // kMetaRecordSize bytes per record
  std::vector<std::vector<uint8_t>> columns_;  // one block per schema column (copied records)
  std::vector<const uint8_t*> referred_;       // per column: the referenced record's bytes
  std::shared_ptr<const void> keepalive_;      // non-null while a record is referenced
  std::vector<int32_t> actor_ids_;             // distinct, ascending
  std::vector<int32_t> record_steps_;          // per record: its steps
  // Where encode() filters a column block before compressing it: reused, so
  // mutable (one thread at a time uses a builder).
  mutable std::vector<uint8_t> scratch_;
  size_t raw_bytes_ = 0;
  int64_t min_wall_time_ns_ = 0, max_wall_time_ns_ = 0;
  int64_t min_episode_id_ = 0, max_episode_id_ = 0;
};

// Encodes `count` records (each valid for `schema`) as one chunk, header and
// data. Throws std::invalid_argument for count == 0 or a block above kMaxBlockSize.
std::vector<uint8_t> encode_chunk(const LogSchema& schema, const Record* records, size_t count);

// From the first kChunkHeaderFixedSize bytes: the header's full size. Checks
// the magic and that the sizes are plausible for `column_count` columns.
size_t chunk_header_size(const uint8_t* fixed, size_t column_count);
// `data` holds the whole header (chunk_header_size bytes); checks its CRC.
ChunkHeader decode_chunk_header(const uint8_t* data, size_t size, size_t column_count);
// `data` holds header.data_size bytes that follow the header: checks the data
// CRC (over the whole data area, every block), decompresses the meta block and
// the selected column blocks and splits them into records.
// `columns` selects schema columns by index (schema.columns.size() flags);
// null or empty selects all. An unselected column is not decompressed: it is
// left empty in every record (so the records do not pass validate_record),
// and only the sizes its chunk header and the records' steps give are checked.
// A selected column is checked exactly as in a full decode, so what a
// selection returns is byte-equal to a full decode's same columns.
// Throws FormatError; std::invalid_argument for a selection of the wrong size.
std::vector<Record> decode_chunk_data(const LogSchema& schema, const ChunkHeader& header,
                                      const uint8_t* data, size_t size,
                                      const std::vector<bool>* columns = nullptr);

// ---- footer ----
// The footer lists every chunk's summary; the trailer after it (the last
// kTrailerSize bytes of a cleanly closed segment) points at the footer.
std::vector<uint8_t> encode_footer(const std::vector<ChunkSummary>& chunks, uint64_t footer_offset);

struct Trailer {
  uint64_t footer_offset = 0;
  uint32_t footer_crc = 0;
};
// nullopt when the bytes are not a trailer (no footer: a torn or open segment).
std::optional<Trailer> decode_trailer(const uint8_t* data);
// `data` holds the footer without its trailer; checks the CRC and the offsets.
std::vector<ChunkSummary> decode_footer(const uint8_t* data, size_t size, const Trailer& trailer);

}  // namespace moonseed::explog
