#include "engine/explog_format.h"

#include <algorithm>
#include <cstring>
#include <set>

#include <lz4.h>

namespace moonseed::engine::explog {
namespace {

// ---- little-endian byte helpers ----

class ByteWriter {
 public:
  explicit ByteWriter(std::vector<uint8_t>& out) : out_(out) {}

  void u8(uint8_t v) { out_.push_back(v); }
  void u32(uint32_t v) {
    for (int i = 0; i < 4; ++i) out_.push_back(static_cast<uint8_t>(v >> (8 * i)));
  }
  void u64(uint64_t v) {
    for (int i = 0; i < 8; ++i) out_.push_back(static_cast<uint8_t>(v >> (8 * i)));
  }
  void i32(int32_t v) { u32(static_cast<uint32_t>(v)); }
  void i64(int64_t v) { u64(static_cast<uint64_t>(v)); }
  void bytes(const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    out_.insert(out_.end(), b, b + n);
  }
  void str(const std::string& s) {
    u32(static_cast<uint32_t>(s.size()));
    bytes(s.data(), s.size());
  }

 private:
  std::vector<uint8_t>& out_;
};

uint32_t load_u32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 |
         static_cast<uint32_t>(p[2]) << 16 | static_cast<uint32_t>(p[3]) << 24;
}

uint64_t load_u64(const uint8_t* p) {
  return static_cast<uint64_t>(load_u32(p)) | static_cast<uint64_t>(load_u32(p + 4)) << 32;
}

// Reads fields in order; running past the end is a FormatError naming `what`.
class ByteReader {
 public:
  ByteReader(const uint8_t* data, size_t size, const char* what)
      : data_(data), size_(size), what_(what) {}

  uint8_t u8() { return *take(1); }
  uint32_t u32() { return load_u32(take(4)); }
  uint64_t u64() { return load_u64(take(8)); }
  int32_t i32() { return static_cast<int32_t>(u32()); }
  int64_t i64() { return static_cast<int64_t>(u64()); }
  std::string str() {
    const uint32_t n = u32();
    const uint8_t* p = take(n);
    return std::string(reinterpret_cast<const char*>(p), n);
  }
  size_t position() const { return pos_; }

 private:
  const uint8_t* take(size_t n) {
    if (n > size_ - pos_) {
      throw FormatError(std::string(what_) + " ends early: field of " + std::to_string(n) +
                        " bytes at byte " + std::to_string(pos_) + " of " + std::to_string(size_));
    }
    const uint8_t* p = data_ + pos_;
    pos_ += n;
    return p;
  }

  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
  const char* what_;
};

// Slicing-by-8: entries[k][b] is the CRC of byte b followed by k zero bytes,
// so eight input bytes advance the CRC with eight lookups (~4x the bytewise loop).
struct Crc32cTable {
  uint32_t entries[8][256];
  Crc32cTable() {
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
      entries[0][i] = c;
    }
    for (int k = 1; k < 8; ++k) {
      for (uint32_t i = 0; i < 256; ++i) {
        const uint32_t prev = entries[k - 1][i];
        entries[k][i] = (prev >> 8) ^ entries[0][prev & 0xFF];
      }
    }
  }
};

const Crc32cTable& crc_table() {
  static const Crc32cTable table;
  return table;
}

bool is_codec(const std::string& codec) { return codec == "lz4" || codec == "none"; }

void encode_meta(ByteWriter& w, const RecordMeta& m) {
  w.i64(m.episode_id);
  w.i64(m.first_step);
  w.i64(m.wall_time_ns);
  w.i64(m.learner_step);
  w.u64(m.config_version);
  w.i32(m.actor_id);
  w.i32(m.env_id);
  w.i32(m.steps);
  w.u8(m.flags);
  w.u8(0);
  w.u8(0);
  w.u8(0);
}

RecordMeta decode_meta(const uint8_t* p) {
  ByteReader r(p, kMetaRecordSize, "record meta");
  RecordMeta m;
  m.episode_id = r.i64();
  m.first_step = r.i64();
  m.wall_time_ns = r.i64();
  m.learner_step = r.i64();
  m.config_version = r.u64();
  m.actor_id = r.i32();
  m.env_id = r.i32();
  m.steps = r.i32();
  m.flags = r.u8();
  return m;
}

// The most bytes a block of `size` raw bytes can store (lz4 or none).
size_t block_bound(bool lz4, size_t size) {
  if (size > kMaxBlockSize) {
    throw std::invalid_argument("explog: a chunk block of " + std::to_string(size) +
                                " bytes is above the limit of " + std::to_string(kMaxBlockSize));
  }
  if (size == 0) return 0;
  return lz4 ? static_cast<size_t>(LZ4_compressBound(static_cast<int>(size))) : size;
}

// Stores `size` bytes at `raw` (lz4-compressed or as they are) into `dst`,
// which has room for block_bound(lz4, size) bytes; returns the stored size.
uint32_t store_block(bool lz4, int acceleration, const uint8_t* raw, size_t size, uint8_t* dst) {
  if (size == 0) return 0;
  if (!lz4) {
    std::memcpy(dst, raw, size);
    return static_cast<uint32_t>(size);
  }
  const int bound = LZ4_compressBound(static_cast<int>(size));
  const int n = LZ4_compress_fast(reinterpret_cast<const char*>(raw), reinterpret_cast<char*>(dst),
                                  static_cast<int>(size), bound, acceleration);
  if (n <= 0) throw std::runtime_error("explog: LZ4_compress_fast failed");
  return static_cast<uint32_t>(n);
}

// The checks on block `index`'s sizes that need none of its bytes.
void check_block_sizes(const std::string& codec, const BlockSize& size, size_t index) {
  if (size.raw == 0 && size.stored != 0) {
    throw FormatError("block " + std::to_string(index) + " is empty but stores " +
                      std::to_string(size.stored) + " bytes");
  }
  if (codec == "none" && size.stored != size.raw) {
    throw FormatError("block " + std::to_string(index) + " stores " + std::to_string(size.stored) +
                      " bytes for " + std::to_string(size.raw) + " uncompressed bytes with codec none");
  }
}

void load_block(const std::string& codec, const uint8_t* stored, const BlockSize& size,
                size_t index, std::vector<uint8_t>& raw) {
  check_block_sizes(codec, size, index);
  raw.resize(size.raw);
  if (size.raw == 0) return;
  if (codec == "none") {
    std::memcpy(raw.data(), stored, size.raw);
    return;
  }
  const int n = LZ4_decompress_safe(reinterpret_cast<const char*>(stored),
                                    reinterpret_cast<char*>(raw.data()),
                                    static_cast<int>(size.stored), static_cast<int>(size.raw));
  if (n != static_cast<int>(size.raw)) {
    throw FormatError("block " + std::to_string(index) + " does not decompress to the " +
                      std::to_string(size.raw) + " bytes its header says (lz4 returned " +
                      std::to_string(n) + ")");
  }
}

void check_magic(const uint8_t* p, const char* magic, size_t n, const char* what) {
  if (std::memcmp(p, magic, n) != 0) throw FormatError(std::string("bad ") + what + " magic");
}

}  // namespace

size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::kU8: return 1;
    case DType::kI32: return 4;
    case DType::kI64: return 8;
    case DType::kF32: return 4;
    case DType::kF64: return 8;
  }
  throw std::invalid_argument("explog: unknown dtype code " +
                              std::to_string(static_cast<int>(dtype)));
}

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::kU8: return "u8";
    case DType::kI32: return "i32";
    case DType::kI64: return "i64";
    case DType::kF32: return "f32";
    case DType::kF64: return "f64";
  }
  return "unknown";
}

DType dtype_from_name(const std::string& name) {
  for (DType d : {DType::kU8, DType::kI32, DType::kI64, DType::kF32, DType::kF64}) {
    if (name == dtype_name(d)) return d;
  }
  throw std::invalid_argument("explog: unknown dtype '" + name + "' (u8, i32, i64, f32, f64)");
}

size_t ColumnSpec::step_bytes() const {
  size_t n = dtype_size(dtype);
  for (int64_t d : shape) n *= static_cast<size_t>(d);
  return n;
}

void validate_schema(const LogSchema& schema) {
  if (!is_codec(schema.codec)) {
    throw std::invalid_argument("explog: unknown codec '" + schema.codec + "' (lz4, none)");
  }
  std::set<std::string> names;
  for (const ColumnSpec& c : schema.columns) {
    if (c.name.empty()) throw std::invalid_argument("explog: a column has an empty name");
    if (!names.insert(c.name).second) {
      throw std::invalid_argument("explog: column '" + c.name + "' appears twice");
    }
    dtype_size(c.dtype);
    if (c.shape.size() > 255) {
      throw std::invalid_argument("explog: column '" + c.name + "' has " +
                                  std::to_string(c.shape.size()) + " dimensions (at most 255)");
    }
    for (int64_t d : c.shape) {
      if (d < 0) {
        throw std::invalid_argument("explog: column '" + c.name + "' has dimension " +
                                    std::to_string(d));
      }
    }
  }
}

bool same_layout(const LogSchema& a, const LogSchema& b) {
  if (a.codec != b.codec || a.columns.size() != b.columns.size()) return false;
  for (size_t i = 0; i < a.columns.size(); ++i) {
    const ColumnSpec& x = a.columns[i];
    const ColumnSpec& y = b.columns[i];
    if (x.name != y.name || x.dtype != y.dtype || x.shape != y.shape) return false;
  }
  return true;
}

bool RecordMeta::operator==(const RecordMeta& o) const {
  return actor_id == o.actor_id && env_id == o.env_id && episode_id == o.episode_id &&
         first_step == o.first_step && steps == o.steps && flags == o.flags &&
         wall_time_ns == o.wall_time_ns && learner_step == o.learner_step &&
         config_version == o.config_version;
}

void validate_record(const LogSchema& schema, const Record& record) {
  if (record.meta.steps < 0) {
    throw std::invalid_argument("explog: record has " + std::to_string(record.meta.steps) +
                                " steps");
  }
  if (record.columns.size() != schema.columns.size()) {
    throw std::invalid_argument("explog: record has " + std::to_string(record.columns.size()) +
                                " columns, the schema " + std::to_string(schema.columns.size()));
  }
  for (size_t i = 0; i < schema.columns.size(); ++i) {
    const size_t want = schema.columns[i].step_bytes() * static_cast<size_t>(record.meta.steps);
    if (record.columns[i].size() != want) {
      throw std::invalid_argument("explog: column '" + schema.columns[i].name + "' holds " +
                                  std::to_string(record.columns[i].size()) + " bytes, " +
                                  std::to_string(record.meta.steps) + " steps need " +
                                  std::to_string(want));
    }
  }
}

size_t record_raw_bytes(const Record& record) {
  size_t n = kMetaRecordSize;
  for (const auto& c : record.columns) n += c.size();
  return n;
}

uint32_t crc32c_portable(const void* data, size_t size, uint32_t crc) {
  const auto& t = crc_table().entries;
  const auto* p = static_cast<const uint8_t*>(data);
  uint32_t c = ~crc;
  for (; size >= 8; size -= 8, p += 8) {
    const uint32_t lo = c ^ load_u32(p);
    const uint32_t hi = load_u32(p + 4);
    c = t[7][lo & 0xFF] ^ t[6][(lo >> 8) & 0xFF] ^ t[5][(lo >> 16) & 0xFF] ^ t[4][lo >> 24] ^
        t[3][hi & 0xFF] ^ t[2][(hi >> 8) & 0xFF] ^ t[1][(hi >> 16) & 0xFF] ^ t[0][hi >> 24];
  }
  for (; size > 0; --size, ++p) c = t[0][(c ^ *p) & 0xFF] ^ (c >> 8);
  return ~c;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
namespace {
// SSE4.2's crc32 instruction computes exactly CRC-32C, 8 bytes at a time.
__attribute__((target("sse4.2"))) uint32_t crc32c_sse42(const void* data, size_t size, uint32_t crc) {
  const auto* p = static_cast<const uint8_t*>(data);
  uint64_t c = ~crc;
  for (; size >= 8; size -= 8, p += 8) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    c = __builtin_ia32_crc32di(c, v);
  }
  uint32_t c32 = static_cast<uint32_t>(c);
  for (; size > 0; --size, ++p) c32 = __builtin_ia32_crc32qi(c32, *p);
  return ~c32;
}
}  // namespace

uint32_t crc32c(const void* data, size_t size, uint32_t crc) {
  static const bool has_sse42 = __builtin_cpu_supports("sse4.2");
  return has_sse42 ? crc32c_sse42(data, size, crc) : crc32c_portable(data, size, crc);
}
#else
uint32_t crc32c(const void* data, size_t size, uint32_t crc) { return crc32c_portable(data, size, crc); }
#endif

// ---- file header ----

std::vector<uint8_t> encode_file_header(const LogSchema& schema) {
  validate_schema(schema);
  std::vector<uint8_t> body;
  ByteWriter b(body);
  b.str(schema.run_id);
  b.str(schema.codec);
  b.str(schema.spec);
  b.u32(static_cast<uint32_t>(schema.columns.size()));
  for (const ColumnSpec& c : schema.columns) {
    b.str(c.name);
    b.u8(static_cast<uint8_t>(c.dtype));
    b.u8(static_cast<uint8_t>(c.shape.size()));
    for (int64_t d : c.shape) b.i64(d);
  }
  if (body.size() > kMaxFileHeaderBody) {
    throw std::invalid_argument("explog: schema encodes to " + std::to_string(body.size()) +
                                " bytes, above the limit of " + std::to_string(kMaxFileHeaderBody));
  }
  std::vector<uint8_t> out;
  ByteWriter w(out);
  w.bytes(kFileMagic, sizeof(kFileMagic));
  w.u32(kFormatVersion);
  w.u32(static_cast<uint32_t>(body.size()));
  w.bytes(body.data(), body.size());
  w.u32(crc32c(out.data(), out.size()));
  return out;
}

size_t file_header_size(const uint8_t* prefix) {
  check_magic(prefix, kFileMagic, sizeof(kFileMagic), "file header");
  const uint32_t version = load_u32(prefix + 8);
  if (version != kFormatVersion) {
    throw FormatError("format version " + std::to_string(version) + ", this build reads " +
                      std::to_string(kFormatVersion));
  }
  const uint32_t body = load_u32(prefix + 12);
  if (body > kMaxFileHeaderBody) {
    throw FormatError("file header body of " + std::to_string(body) + " bytes is implausible");
  }
  return kFileHeaderPrefixSize + body + 4;
}

LogSchema decode_file_header(const uint8_t* data, size_t size) {
  if (size < kFileHeaderPrefixSize || file_header_size(data) != size) {
    throw FormatError("file header size mismatch");
  }
  if (crc32c(data, size - 4) != load_u32(data + size - 4)) {
    throw FormatError("file header checksum mismatch");
  }
  ByteReader r(data + kFileHeaderPrefixSize, size - kFileHeaderPrefixSize - 4, "file header");
  LogSchema schema;
  schema.run_id = r.str();
  schema.codec = r.str();
  schema.spec = r.str();
  const uint32_t ncols = r.u32();
  for (uint32_t i = 0; i < ncols; ++i) {
    ColumnSpec c;
    c.name = r.str();
    c.dtype = static_cast<DType>(r.u8());
    const uint8_t rank = r.u8();
    for (uint8_t k = 0; k < rank; ++k) c.shape.push_back(r.i64());
    schema.columns.push_back(std::move(c));
  }
  try {
    validate_schema(schema);
  } catch (const std::invalid_argument& e) {
    throw FormatError(std::string("file header holds an invalid schema: ") + e.what());
  }
  return schema;
}

// ---- chunks ----

bool ChunkSummary::has_actor(int32_t actor_id) const {
  return std::binary_search(actor_ids.begin(), actor_ids.end(), actor_id);
}

bool ChunkSummary::operator==(const ChunkSummary& o) const {
  return offset == o.offset && record_count == o.record_count &&
         min_wall_time_ns == o.min_wall_time_ns && max_wall_time_ns == o.max_wall_time_ns &&
         min_episode_id == o.min_episode_id && max_episode_id == o.max_episode_id &&
         actor_ids == o.actor_ids;
}

ChunkBuilder::ChunkBuilder(const LogSchema& schema) : schema_(&schema), columns_(schema.columns.size()) {
  for (const ColumnSpec& c : schema.columns) step_bytes_.push_back(c.step_bytes());
}

void ChunkBuilder::add(const RecordMeta& meta, const uint8_t* const* columns) {
  if (meta.steps < 0) {
    throw std::invalid_argument("explog: record has " + std::to_string(meta.steps) + " steps");
  }
  const size_t steps = static_cast<size_t>(meta.steps);
  for (size_t c = 0; c < columns_.size(); ++c) {
    if (steps > 0 && step_bytes_[c] > 0 && columns[c] == nullptr) {
      throw std::invalid_argument("explog: column '" + schema_->columns[c].name + "' of a record of " +
                                  std::to_string(steps) + " steps is null");
    }
  }
  if (records_ == 0) {
    min_wall_time_ns_ = max_wall_time_ns_ = meta.wall_time_ns;
    min_episode_id_ = max_episode_id_ = meta.episode_id;
  } else {
    min_wall_time_ns_ = std::min(min_wall_time_ns_, meta.wall_time_ns);
    max_wall_time_ns_ = std::max(max_wall_time_ns_, meta.wall_time_ns);
    min_episode_id_ = std::min(min_episode_id_, meta.episode_id);
    max_episode_id_ = std::max(max_episode_id_, meta.episode_id);
  }
  const auto at = std::lower_bound(actor_ids_.begin(), actor_ids_.end(), meta.actor_id);
  if (at == actor_ids_.end() || *at != meta.actor_id) actor_ids_.insert(at, meta.actor_id);
  ByteWriter w(meta_block_);
  encode_meta(w, meta);
  raw_bytes_ += kMetaRecordSize;
  for (size_t c = 0; c < columns_.size(); ++c) {
    const size_t bytes = steps * step_bytes_[c];
    if (bytes == 0) continue;
    columns_[c].insert(columns_[c].end(), columns[c], columns[c] + bytes);
    raw_bytes_ += bytes;
  }
  ++records_;
}

void ChunkBuilder::add(const Record& record) {
  validate_record(*schema_, record);
  std::vector<const uint8_t*> columns(record.columns.size());
  for (size_t c = 0; c < columns.size(); ++c) columns[c] = record.columns[c].data();
  add(record.meta, columns.data());
}

void ChunkBuilder::clear() {
  meta_block_.clear();
  for (std::vector<uint8_t>& c : columns_) c.clear();
  actor_ids_.clear();
  records_ = 0;
  raw_bytes_ = 0;
}

ChunkSummary ChunkBuilder::encode(std::vector<uint8_t>& out, int lz4_acceleration) const {
  if (records_ == 0) throw std::invalid_argument("explog: a chunk needs at least one record");
  const bool lz4 = schema_->codec == "lz4";
  const size_t nblocks = columns_.size() + 1;
  const size_t header_size = kChunkHeaderFixedSize + 8 * nblocks + 4 * actor_ids_.size() + 4;
  auto block = [&](size_t i) -> const std::vector<uint8_t>& { return i == 0 ? meta_block_ : columns_[i - 1]; };
  size_t bound = header_size;
  for (size_t i = 0; i < nblocks; ++i) bound += block_bound(lz4, block(i).size());
  // Resizing a reused buffer writes only the bytes beyond its old size.
  out.resize(bound);
  std::vector<BlockSize> blocks(nblocks);
  size_t pos = header_size;
  for (size_t i = 0; i < nblocks; ++i) {
    const std::vector<uint8_t>& raw = block(i);
    blocks[i].raw = static_cast<uint32_t>(raw.size());
    blocks[i].stored = store_block(lz4, lz4_acceleration, raw.data(), raw.size(), out.data() + pos);
    pos += blocks[i].stored;
  }
  out.resize(pos);
  const uint64_t data_size = pos - header_size;

  ChunkSummary s;
  s.record_count = static_cast<uint32_t>(records_);
  s.min_wall_time_ns = min_wall_time_ns_;
  s.max_wall_time_ns = max_wall_time_ns_;
  s.min_episode_id = min_episode_id_;
  s.max_episode_id = max_episode_id_;
  s.actor_ids = actor_ids_;
  std::vector<uint8_t> header;
  header.reserve(header_size);
  ByteWriter w(header);
  w.bytes(kChunkMagic, sizeof(kChunkMagic));
  w.u32(static_cast<uint32_t>(header_size));
  w.u32(s.record_count);
  w.u32(static_cast<uint32_t>(nblocks));
  w.i64(s.min_wall_time_ns);
  w.i64(s.max_wall_time_ns);
  w.i64(s.min_episode_id);
  w.i64(s.max_episode_id);
  w.u64(data_size);
  w.u32(crc32c(out.data() + header_size, data_size));
  w.u32(static_cast<uint32_t>(s.actor_ids.size()));
  for (const BlockSize& b : blocks) {
    w.u32(b.raw);
    w.u32(b.stored);
  }
  for (int32_t a : s.actor_ids) w.i32(a);
  w.u32(crc32c(header.data(), header.size()));
  std::memcpy(out.data(), header.data(), header_size);
  return s;
}

std::vector<uint8_t> encode_chunk(const LogSchema& schema, const Record* records, size_t count) {
  ChunkBuilder builder(schema);
  for (size_t i = 0; i < count; ++i) builder.add(records[i]);
  std::vector<uint8_t> out;
  builder.encode(out);
  return out;
}

size_t chunk_header_size(const uint8_t* fixed, size_t column_count) {
  check_magic(fixed, kChunkMagic, sizeof(kChunkMagic), "chunk");
  const uint32_t size = load_u32(fixed + 4);
  const uint32_t records = load_u32(fixed + 8);
  const uint32_t blocks = load_u32(fixed + 12);
  const uint32_t actors = load_u32(fixed + 60);
  if (blocks != column_count + 1) {
    throw FormatError("chunk has " + std::to_string(blocks) + " blocks, the schema needs " +
                      std::to_string(column_count + 1));
  }
  if (records == 0 || actors == 0 || actors > records) {
    throw FormatError("chunk claims " + std::to_string(records) + " records of " +
                      std::to_string(actors) + " actors");
  }
  const uint64_t want = kChunkHeaderFixedSize + 8ull * blocks + 4ull * actors + 4;
  if (size != want) {
    throw FormatError("chunk header size " + std::to_string(size) + " should be " +
                      std::to_string(want));
  }
  return size;
}

ChunkHeader decode_chunk_header(const uint8_t* data, size_t size, size_t column_count) {
  if (size < kChunkHeaderFixedSize || chunk_header_size(data, column_count) != size) {
    throw FormatError("chunk header size mismatch");
  }
  if (crc32c(data, size - 4) != load_u32(data + size - 4)) {
    throw FormatError("chunk header checksum mismatch");
  }
  ByteReader r(data, size - 4, "chunk header");
  ChunkHeader h;
  r.u32();  // magic
  h.header_size = r.u32();
  h.summary.record_count = r.u32();
  const uint32_t nblocks = r.u32();
  h.summary.min_wall_time_ns = r.i64();
  h.summary.max_wall_time_ns = r.i64();
  h.summary.min_episode_id = r.i64();
  h.summary.max_episode_id = r.i64();
  h.data_size = r.u64();
  h.data_crc = r.u32();
  const uint32_t nactors = r.u32();
  uint64_t stored = 0;
  for (uint32_t i = 0; i < nblocks; ++i) {
    BlockSize b;
    b.raw = r.u32();
    b.stored = r.u32();
    if (b.raw > kMaxBlockSize) {
      throw FormatError("block " + std::to_string(i) + " claims " + std::to_string(b.raw) +
                        " uncompressed bytes");
    }
    stored += b.stored;
    h.blocks.push_back(b);
  }
  for (uint32_t i = 0; i < nactors; ++i) h.summary.actor_ids.push_back(r.i32());
  if (stored != h.data_size) {
    throw FormatError("chunk blocks store " + std::to_string(stored) + " bytes, the header says " +
                      std::to_string(h.data_size));
  }
  if (h.blocks[0].raw != kMetaRecordSize * h.summary.record_count) {
    throw FormatError("meta block of " + std::to_string(h.blocks[0].raw) + " bytes for " +
                      std::to_string(h.summary.record_count) + " records");
  }
  return h;
}

std::vector<Record> decode_chunk_data(const LogSchema& schema, const ChunkHeader& header,
                                      const uint8_t* data, size_t size) {
  if (size != header.data_size) {
    throw FormatError("chunk data is " + std::to_string(size) + " bytes, the header says " +
                      std::to_string(header.data_size));
  }
  if (crc32c(data, size) != header.data_crc) throw FormatError("chunk data checksum mismatch");

  std::vector<uint8_t> raw;
  const uint8_t* p = data;
  load_block(schema.codec, p, header.blocks[0], 0, raw);
  p += header.blocks[0].stored;
  const size_t n = header.summary.record_count;
  std::vector<Record> records(n);
  for (size_t i = 0; i < n; ++i) {
    records[i].meta = decode_meta(raw.data() + i * kMetaRecordSize);
    if (records[i].meta.steps < 0) {
      throw FormatError("record " + std::to_string(i) + " has " +
                        std::to_string(records[i].meta.steps) + " steps");
    }
    records[i].columns.resize(schema.columns.size());
  }
  for (size_t c = 0; c < schema.columns.size(); ++c) {
    const BlockSize& b = header.blocks[c + 1];
    load_block(schema.codec, p, b, c + 1, raw);
    p += b.stored;
    const size_t step_bytes = schema.columns[c].step_bytes();
    size_t pos = 0;
    for (size_t i = 0; i < n; ++i) {
      const size_t len = step_bytes * static_cast<size_t>(records[i].meta.steps);
      if (len > raw.size() - pos) {
        throw FormatError("column '" + schema.columns[c].name + "' block is " +
                          std::to_string(raw.size()) + " bytes, shorter than its records' steps need");
      }
      records[i].columns[c].assign(raw.begin() + pos, raw.begin() + pos + len);
      pos += len;
    }
    if (pos != raw.size()) {
      throw FormatError("column '" + schema.columns[c].name + "' block is " +
                        std::to_string(raw.size()) + " bytes, its records' steps need " +
                        std::to_string(pos));
    }
  }
  return records;
}

// ---- footer ----

std::vector<uint8_t> encode_footer(const std::vector<ChunkSummary>& chunks, uint64_t footer_offset) {
  std::vector<uint8_t> out;
  ByteWriter w(out);
  uint64_t records = 0;
  for (const ChunkSummary& c : chunks) records += c.record_count;
  w.bytes(kFooterMagic, sizeof(kFooterMagic));
  w.u32(static_cast<uint32_t>(chunks.size()));
  w.u64(records);
  for (const ChunkSummary& c : chunks) {
    w.u64(c.offset);
    w.u32(c.record_count);
    w.u32(static_cast<uint32_t>(c.actor_ids.size()));
    w.i64(c.min_wall_time_ns);
    w.i64(c.max_wall_time_ns);
    w.i64(c.min_episode_id);
    w.i64(c.max_episode_id);
    for (int32_t a : c.actor_ids) w.i32(a);
  }
  const uint32_t crc = crc32c(out.data(), out.size());
  w.u64(footer_offset);
  w.u32(crc);
  w.bytes(kTrailerMagic, sizeof(kTrailerMagic));
  return out;
}

std::optional<Trailer> decode_trailer(const uint8_t* data) {
  if (std::memcmp(data + 12, kTrailerMagic, sizeof(kTrailerMagic)) != 0) return std::nullopt;
  return Trailer{load_u64(data), load_u32(data + 8)};
}

std::vector<ChunkSummary> decode_footer(const uint8_t* data, size_t size, const Trailer& trailer) {
  if (size < 16) throw FormatError("footer of " + std::to_string(size) + " bytes is too short");
  check_magic(data, kFooterMagic, sizeof(kFooterMagic), "footer");
  if (crc32c(data, size) != trailer.footer_crc) throw FormatError("footer checksum mismatch");
  ByteReader r(data + 4, size - 4, "footer");
  const uint32_t n = r.u32();
  const uint64_t records = r.u64();
  std::vector<ChunkSummary> chunks;
  uint64_t counted = 0;
  for (uint32_t i = 0; i < n; ++i) {
    ChunkSummary c;
    c.offset = r.u64();
    c.record_count = r.u32();
    const uint32_t nactors = r.u32();
    c.min_wall_time_ns = r.i64();
    c.max_wall_time_ns = r.i64();
    c.min_episode_id = r.i64();
    c.max_episode_id = r.i64();
    for (uint32_t k = 0; k < nactors; ++k) c.actor_ids.push_back(r.i32());
    if (c.offset >= trailer.footer_offset || (!chunks.empty() && c.offset <= chunks.back().offset)) {
      throw FormatError("footer entry " + std::to_string(i) + " has offset " +
                        std::to_string(c.offset));
    }
    counted += c.record_count;
    chunks.push_back(std::move(c));
  }
  if (r.position() != size - 4 || counted != records) {
    throw FormatError("footer totals do not match its entries");
  }
  return chunks;
}

}  // namespace moonseed::engine::explog
