// Little-endian byte writing and bounds-checked reading for the experience
// log's encoders and decoders (explog_format.cc, explog_chunk.cc). Internal
// to the explog library (not installed, not part of its interface).
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "explog/format.h"

namespace moonseed::explog {

// Appends fields to a byte vector, little-endian.
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

inline uint32_t load_u32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 |
         static_cast<uint32_t>(p[2]) << 16 | static_cast<uint32_t>(p[3]) << 24;
}

inline uint64_t load_u64(const uint8_t* p) {
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

inline void check_magic(const uint8_t* p, const char* magic, size_t n, const char* what) {
  if (std::memcmp(p, magic, n) != 0) throw FormatError(std::string("bad ") + what + " magic");
}

}  // namespace moonseed::explog
