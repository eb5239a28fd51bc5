// Wire codec: the plain messages of rpc/messages.h <-> one framed Cap'n Proto
// message (standard stream framing: u32 segment count - 1, u32 size in words of
// each segment, padding to 8 bytes, then the segments; all little-endian).
//
// Ownership: encode() writes into a caller-owned vector (its capacity is reused,
// so a caller that keeps the vector allocates nothing per message once it has
// grown). decode() reads a caller-owned buffer and copies each field once into
// the returned plain struct; it keeps no pointer into the buffer.
//
// Failure: decoding untrusted bytes never throws and never reads outside
// [data, data + size); every problem comes back as a DecodeError naming it.
// encode() throws only what allocation throws.
//
// Thread-safety: all functions are reentrant; there is no shared state.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "rpc/messages.h"

namespace moonseed::rpc {

// Bounds applied to every frame read from a peer.
struct FrameLimits {
  size_t max_frame_bytes = size_t{64} << 20;  // segment table + segments
  uint64_t traversal_limit_words = uint64_t{8} << 20;  // Cap'n Proto read amplification bound
  int nesting_limit = 16;                      // our schema nests 4 deep at most
  uint32_t max_segments = 512;
};

// How much of a frame the first bytes of a stream describe.
struct FrameExtent {
  enum class Status {
    kNeedHeader,  // `bytes` = bytes needed before the frame size is known
    kKnown,       // `bytes` = size of the whole frame
    kInvalid,     // `error` says why; the stream cannot be resynchronised
  };
  Status status = Status::kNeedHeader;
  size_t bytes = 0;
  std::string error;
};

// Reads the segment table at the start of `data` (`available` bytes of it may
// be read). Rejects more than limits.max_segments segments and frames above
// limits.max_frame_bytes before any of the body has arrived.
FrameExtent frame_extent(const uint8_t* data, size_t available, const FrameLimits& limits);

// Everything that may travel in a Frame.
using Message = std::variant<Hello, Welcome, StepBatch, ActionBatch, ConfigUpdate, Bye, ActorNotice>;

struct DecodeError {
  std::string reason;
};

using DecodeResult =
    std::variant<Hello, Welcome, StepBatch, ActionBatch, ConfigUpdate, Bye, ActorNotice, DecodeError>;

// Decodes exactly one frame of `size` bytes (as told by frame_extent); trailing
// bytes are an error. `data` need not be 8-byte aligned (unaligned input is
// copied once into an aligned scratch buffer).
DecodeResult decode(const uint8_t* data, size_t size, const FrameLimits& limits = {});

// Same, into `out`: when `out` already holds the decoded message's type, its
// vectors and strings are overwritten in place, so their capacity is reused.
// Returns false and fills `error` when the frame is bad; `out` is then unspecified.
bool decode_into(const uint8_t* data, size_t size, const FrameLimits& limits, Message& out,
                 DecodeError& error);

// Short type name of a message for logs: "Hello", "StepBatch", ...
const char* message_name(const Message& message);

// Encoders: replace the contents of `frame` with the framed message.
void encode(const Hello& message, std::vector<uint8_t>& frame);
void encode(const Welcome& message, std::vector<uint8_t>& frame);
void encode(const StepBatch& message, std::vector<uint8_t>& frame);
void encode(const ActionBatch& message, std::vector<uint8_t>& frame);
void encode(const ConfigUpdate& message, std::vector<uint8_t>& frame);
void encode(const Bye& message, std::vector<uint8_t>& frame);
void encode(const ActorNotice& message, std::vector<uint8_t>& frame);
void encode(const Message& message, std::vector<uint8_t>& frame);

// Convenience forms returning a fresh vector.
std::vector<uint8_t> encode(const Hello& message);
std::vector<uint8_t> encode(const Welcome& message);
std::vector<uint8_t> encode(const StepBatch& message);
std::vector<uint8_t> encode(const ActionBatch& message);
std::vector<uint8_t> encode(const ConfigUpdate& message);
std::vector<uint8_t> encode(const Bye& message);
std::vector<uint8_t> encode(const ActorNotice& message);

namespace detail {
// For tests and the fuzz corpus: encodes with segments of about
// `segment_words` words, so a message of any size spans many segments linked
// by far pointers, a shape other Cap'n Proto writers may produce.
void encode_in_small_segments(const Message& message, size_t segment_words,
                              std::vector<uint8_t>& frame);
}  // namespace detail

}  // namespace moonseed::rpc
