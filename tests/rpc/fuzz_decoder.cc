// Fuzz target for everything that reads untrusted bytes from a socket: the
// segment-table check, the stream reassembly and the frame decoder.
// Built as a libFuzzer binary with -DMOONSEED_FUZZ=ON (clang), and driven by
// fuzz_decoder_smoke otherwise.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <type_traits>
#include <vector>

#include "rpc/codec.h"
#include "rpc/frame_reader.h"

namespace {

using moonseed::rpc::DecodeError;
using moonseed::rpc::DecodeResult;
using moonseed::rpc::FrameLimits;
using moonseed::rpc::FrameReader;

// Smaller than production limits so the fuzzer spends its time on structure.
FrameLimits fuzz_limits() {
  FrameLimits limits;
  limits.max_frame_bytes = size_t{1} << 20;
  limits.traversal_limit_words = uint64_t{1} << 18;
  return limits;
}

bool encode_result(const DecodeResult& result, std::vector<uint8_t>& frame) {
  bool encoded = false;
  std::visit(
      [&](const auto& message) {
        if constexpr (!std::is_same_v<std::decay_t<decltype(message)>, DecodeError>) {
          moonseed::rpc::encode(message, frame);
          encoded = true;
        }
      },
      result);
  return encoded;
}

// Whatever decodes must re-encode to a frame that decodes to the same bytes.
void check_round_trip(const DecodeResult& result) {
  std::vector<uint8_t> first;
  if (!encode_result(result, first)) return;
  const DecodeResult again = moonseed::rpc::decode(first.data(), first.size());
  std::vector<uint8_t> second;
  if (!encode_result(again, second) || first != second) std::abort();
}

// The input as a byte stream arriving in uneven pieces.
void feed_as_stream(const uint8_t* data, size_t size, const FrameLimits& limits) {
  FrameReader reader(limits, 64);
  const size_t piece = 1 + (size > 0 ? data[0] % 61 : 0);
  size_t at = 0;
  for (;;) {
    FrameReader::Next next = reader.next();
    if (next.status == FrameReader::Next::Status::kFrame) {
      const DecodeResult result = moonseed::rpc::decode(next.data, next.size, limits);
      (void)result;
      continue;
    }
    if (next.status == FrameReader::Next::Status::kInvalid || at == size) return;
    size_t n = piece;
    if (n > reader.writable()) n = reader.writable();
    if (n > size - at) n = size - at;
    std::memcpy(reader.write_ptr(), data + at, n);
    reader.commit(n);
    at += n;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const FrameLimits limits = fuzz_limits();
  (void)moonseed::rpc::frame_extent(data, size, limits);
  check_round_trip(moonseed::rpc::decode(data, size, limits));
  feed_as_stream(data, size, limits);
  return 0;
}
