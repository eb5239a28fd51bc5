// Chunks of the experience log (docs/experience-log-format.md, "Chunks"):
// ChunkBuilder and encode_chunk write them, chunk_header_size,
// decode_chunk_header and decode_chunk_data read them. Declared in explog_format.h.
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include <lz4.h>

#include "explog/bytes.h"
#include "explog/format.h"

namespace moonseed::explog {
namespace {

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

// Checks that a block of `raw_size` bytes of `column` holds exactly what the
// steps of `records` need, as a full decode splits it.
void check_column_size(const ColumnSpec& column, const std::vector<Record>& records, size_t raw_size) {
  const size_t step_bytes = column.step_bytes();
  size_t need = 0;
  for (const Record& r : records) {
    const size_t len = step_bytes * static_cast<size_t>(r.meta.steps);
    if (len > raw_size - need) {
      throw FormatError("column '" + column.name + "' block is " + std::to_string(raw_size) +
                        " bytes, shorter than its records' steps need");
    }
    need += len;
  }
  if (need != raw_size) {
    throw FormatError("column '" + column.name + "' block is " + std::to_string(raw_size) +
                      " bytes, its records' steps need " + std::to_string(need));
  }
}

// dst[j] = a[j] ^ b[j]; dst[j] ^= a[j]. The rows never overlap, which lets
// the compiler vectorize both.
void xor_rows(uint8_t* __restrict dst, const uint8_t* __restrict a, const uint8_t* __restrict b, size_t n) {
  for (size_t j = 0; j < n; ++j) dst[j] = a[j] ^ b[j];
}
void xor_row_into(uint8_t* __restrict dst, const uint8_t* __restrict a, size_t n) {
  for (size_t j = 0; j < n; ++j) dst[j] ^= a[j];
}

// Stores `block` (records of steps[i] steps of `step_bytes` bytes each, one
// after another) XOR-filtered into `out`: each record's first step as it is,
// every later step XORed with the step before it.
void xor_previous(const uint8_t* block, const std::vector<int32_t>& steps, size_t step_bytes, uint8_t* out) {
  for (const int32_t n : steps) {
    if (n == 0) continue;
    std::memcpy(out, block, step_bytes);
    for (int32_t t = 1; t < n; ++t) {
      const size_t at = static_cast<size_t>(t) * step_bytes;
      xor_rows(out + at, block + at, block + at - step_bytes, step_bytes);
    }
    block += static_cast<size_t>(n) * step_bytes;
    out += static_cast<size_t>(n) * step_bytes;
  }
}

// Undoes xor_previous in place on a decoded block of records.
void unxor_previous(uint8_t* block, const std::vector<Record>& records, size_t step_bytes) {
  for (const Record& r : records) {
    for (int32_t t = 1; t < r.meta.steps; ++t) {
      const size_t at = static_cast<size_t>(t) * step_bytes;
      xor_row_into(block + at, block + at - step_bytes, step_bytes);
    }
    block += static_cast<size_t>(r.meta.steps) * step_bytes;
  }
}

}  // namespace

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

void ChunkBuilder::check_record(const RecordMeta& meta, const uint8_t* const* columns) const {
  if (keepalive_) throw std::logic_error("explog: a chunk with a referenced record takes no other");
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
}

void ChunkBuilder::add_meta(const RecordMeta& meta) {
  if (record_steps_.empty()) {
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
  record_steps_.push_back(meta.steps);
}

void ChunkBuilder::add(const RecordMeta& meta, const uint8_t* const* columns) {
  check_record(meta, columns);
  const size_t steps = static_cast<size_t>(meta.steps);
  for (size_t c = 0; c < columns_.size(); ++c) {
    const size_t bytes = steps * step_bytes_[c];
    if (bytes == 0) continue;
    columns_[c].insert(columns_[c].end(), columns[c], columns[c] + bytes);
    raw_bytes_ += bytes;
  }
  add_meta(meta);
}

void ChunkBuilder::add(const Record& record) {
  validate_record(*schema_, record);
  std::vector<const uint8_t*> columns(record.columns.size());
  for (size_t c = 0; c < columns.size(); ++c) columns[c] = record.columns[c].data();
  add(record.meta, columns.data());
}

void ChunkBuilder::refer(const RecordMeta& meta, const uint8_t* const* columns,
                         std::shared_ptr<const void> keepalive) {
  check_record(meta, columns);
  if (!empty()) throw std::logic_error("explog: a referenced record must be its chunk's only one");
  if (!keepalive) throw std::invalid_argument("explog: a referenced record needs a keepalive");
  referred_.assign(columns, columns + columns_.size());
  for (size_t c = 0; c < columns_.size(); ++c) raw_bytes_ += static_cast<size_t>(meta.steps) * step_bytes_[c];
  add_meta(meta);
  keepalive_ = std::move(keepalive);
}

uint64_t ChunkBuilder::step_count() const {
  uint64_t steps = 0;
  for (int32_t n : record_steps_) steps += static_cast<uint64_t>(n);
  return steps;
}

void ChunkBuilder::clear() {
  meta_block_.clear();
  for (std::vector<uint8_t>& c : columns_) c.clear();
  referred_.clear();
  keepalive_.reset();
  record_steps_.clear();
  actor_ids_.clear();
  raw_bytes_ = 0;
}

ChunkSummary ChunkBuilder::encode(std::vector<uint8_t>& out, int lz4_acceleration) const {
  ChunkSummary summary;
  out.resize(encode_into(out, lz4_acceleration, &summary));
  return summary;
}

size_t ChunkBuilder::encode_into(std::vector<uint8_t>& out, int lz4_acceleration, ChunkSummary* summary) const {
  if (empty()) throw std::invalid_argument("explog: a chunk needs at least one record");
  const bool lz4 = schema_->codec == "lz4";
  const size_t nblocks = columns_.size() + 1;
  const size_t header_size = kChunkHeaderFixedSize + 8 * nblocks + 4 * actor_ids_.size() + 4;
  // Block 0 is the meta block, block c + 1 column c: copied or referenced.
  std::vector<BlockSize> blocks(nblocks);
  std::vector<const uint8_t*> raw(nblocks);
  size_t bound = header_size;
  for (size_t i = 0; i < nblocks; ++i) {
    size_t size;
    if (i == 0) {
      raw[i] = meta_block_.data();
      size = meta_block_.size();
    } else if (keepalive_) {  // one record: its steps of the column
      raw[i] = referred_[i - 1];
      size = static_cast<size_t>(record_steps_.front()) * step_bytes_[i - 1];
    } else {
      raw[i] = columns_[i - 1].data();
      size = columns_[i - 1].size();
    }
    bound += block_bound(lz4, size);  // throws above kMaxBlockSize
    blocks[i].raw = static_cast<uint32_t>(size);
  }
  // Growing a buffer zero-fills only the bytes beyond its old size.
  if (out.size() < bound) out.resize(bound);
  size_t pos = header_size;
  for (size_t i = 0; i < nblocks; ++i) {
    const uint8_t* source = raw[i];
    if (i > 0 && blocks[i].raw > 0 && schema_->columns[i - 1].filter == ColumnFilter::kXorPrevious) {
      if (scratch_.size() < blocks[i].raw) scratch_.resize(blocks[i].raw);
      xor_previous(raw[i], record_steps_, step_bytes_[i - 1], scratch_.data());
      source = scratch_.data();
    }
    blocks[i].stored = store_block(lz4, lz4_acceleration, source, blocks[i].raw, out.data() + pos);
    pos += blocks[i].stored;
  }
  const uint64_t data_size = pos - header_size;

  ChunkSummary& s = *summary;
  s = ChunkSummary{};
  s.record_count = static_cast<uint32_t>(record_count());
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
  return pos;
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
                                      const uint8_t* data, size_t size,
                                      const std::vector<bool>* columns) {
  const bool select = columns != nullptr && !columns->empty();
  if (select && columns->size() != schema.columns.size()) {
    throw std::invalid_argument("explog: a selection of " + std::to_string(columns->size()) +
                                " columns for a schema of " + std::to_string(schema.columns.size()));
  }
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
    const uint8_t* stored = p;
    p += b.stored;
    if (select && !(*columns)[c]) {
      check_block_sizes(schema.codec, b, c + 1);
      check_column_size(schema.columns[c], records, b.raw);
      continue;
    }
    load_block(schema.codec, stored, b, c + 1, raw);
    check_column_size(schema.columns[c], records, raw.size());
    const size_t step_bytes = schema.columns[c].step_bytes();
    if (schema.columns[c].filter == ColumnFilter::kXorPrevious) unxor_previous(raw.data(), records, step_bytes);
    size_t pos = 0;
    for (Record& r : records) {
      const size_t len = step_bytes * static_cast<size_t>(r.meta.steps);
      r.columns[c].assign(raw.begin() + pos, raw.begin() + pos + len);
      pos += len;
    }
  }
  return records;
}

}  // namespace moonseed::explog
