// Internal to the codec: what rpc/codec_decode.cc and rpc/codec_encode.cc both
// need of the stream framing's segment table (u32 segment count - 1, u32 words
// per segment, padding to 8 bytes). Other files use rpc/codec.h; this header
// stays free of Cap'n Proto types so it cannot leak them.
//
// Contract: read_u32/write_u32 touch exactly 4 bytes at `p`, which the caller
// has bounded; nothing here checks or throws.
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace moonseed::rpc::codec_internal {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "the segment table is read and written with memcpy: little-endian hosts only");

inline uint32_t read_u32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

inline void write_u32(uint8_t* p, uint32_t v) { std::memcpy(p, &v, sizeof v); }

// Bytes of the segment table of a frame of `segment_count` segments, padded to a word.
inline size_t table_bytes(uint32_t segment_count) { return (size_t{4} * (segment_count + 1) + 7) & ~size_t{7}; }

}  // namespace moonseed::rpc::codec_internal
