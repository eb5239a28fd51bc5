#include "explog/format.h"

#include <algorithm>
#include <cstring>
#include <set>

#include "explog/bytes.h"

namespace moonseed::explog {
namespace {

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

const char* filter_name(ColumnFilter filter) {
  switch (filter) {
    case ColumnFilter::kNone: return "none";
    case ColumnFilter::kXorPrevious: return "xor_previous";
  }
  return "unknown";
}

DType dtype_from_name(const std::string& name) {
  for (DType d : {DType::kU8, DType::kI32, DType::kI64, DType::kF32, DType::kF64}) {
    if (name == dtype_name(d)) return d;
  }
  throw std::invalid_argument("explog: unknown dtype '" + name + "' (u8, i32, i64, f32, f64)");
}

double value_as_double(DType dtype, const uint8_t* data) {
  switch (dtype) {
    case DType::kU8: return data[0];
    case DType::kI32: return static_cast<int32_t>(load_u32(data));
    case DType::kI64: return static_cast<double>(static_cast<int64_t>(load_u64(data)));
    case DType::kF32: {
      const uint32_t bits = load_u32(data);
      float v;
      std::memcpy(&v, &bits, sizeof v);
      return v;
    }
    case DType::kF64: {
      const uint64_t bits = load_u64(data);
      double v;
      std::memcpy(&v, &bits, sizeof v);
      return v;
    }
  }
  return 0;
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
    if (c.filter != ColumnFilter::kNone && c.filter != ColumnFilter::kXorPrevious) {
      throw std::invalid_argument("explog: column '" + c.name + "' has unknown filter " +
                                  std::to_string(static_cast<int>(c.filter)));
    }
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
  if (a.columns.size() != b.columns.size()) return false;
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
    b.u8(static_cast<uint8_t>(c.filter));
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
  if (version < kOldestFormatVersion || version > kFormatVersion) {
    throw FormatError("format version " + std::to_string(version) + ", this build reads " +
                      std::to_string(kOldestFormatVersion) + " to " + std::to_string(kFormatVersion));
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
  const uint32_t version = load_u32(data + 8);
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
    if (version >= 2) c.filter = static_cast<ColumnFilter>(r.u8());
    schema.columns.push_back(std::move(c));
  }
  try {
    validate_schema(schema);
  } catch (const std::invalid_argument& e) {
    throw FormatError(std::string("file header holds an invalid schema: ") + e.what());
  }
  return schema;
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

}  // namespace moonseed::explog
