// Cuts a byte stream into frames. The owner reads from its socket into
// write_ptr()/writable(), commit()s the bytes, then takes complete frames with
// next() until it says kNeedMore. Bytes of several frames arriving in one read
// are handed out one by one without copying; a partial frame is moved to the
// front of the buffer only when the rest would not fit behind it.
//
// Ownership: the reader owns its buffer. A frame returned by next() points into
// it and stays valid until the next call of next(), commit() or write_ptr().
// Frames always start 8-byte aligned (frame sizes are multiples of 8).
//
// Memory: the buffer grows with the bytes that arrive, not with the size a
// frame's header claims: it doubles (up to the frame's size) only when the
// received bytes fill it. So a peer that announces a huge frame and sends
// little costs little. The buffer never grows beyond the largest frame the
// limits allow, and shrinks back to initial_bytes once a frame far larger
// has been handed out.
//
// Failure: an invalid segment table (too many segments, frame above
// limits.max_frame_bytes) is returned as kInvalid with the reason; the stream
// cannot be resynchronised after that.
//
// Thread-safety: none; one reader per stream, used by one thread at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "rpc/codec.h"

namespace moonseed::rpc {

class FrameReader {
 public:
  explicit FrameReader(const FrameLimits& limits, size_t initial_bytes = 64 * 1024);

  struct Next {
    enum class Status { kFrame, kNeedMore, kInvalid };
    Status status = Status::kNeedMore;
    const uint8_t* data = nullptr;  // kFrame: the whole frame
    size_t size = 0;
    std::string error;  // kInvalid: why
  };

  // The next complete frame, or kNeedMore (then writable() > 0), or kInvalid.
  Next next();

  uint8_t* write_ptr();
  size_t writable() const;
  void commit(size_t bytes);

  // New limits for the frames from here on (e.g. larger once a peer is
  // admitted) and the size the buffer shrinks back to. Takes nothing already
  // received away; allocates nothing.
  void set_limits(const FrameLimits& limits, size_t initial_bytes);

  // Drops every byte received and not handed out (the stream is being
  // abandoned); keeps the buffer.
  void clear() { begin_ = end_ = 0; }

  size_t buffered() const { return end_ - begin_; }
  size_t capacity() const { return storage_.size() * sizeof(uint64_t); }  // bytes held
  const FrameLimits& limits() const { return limits_; }

 private:
  uint8_t* base() { return reinterpret_cast<uint8_t*>(storage_.data()); }
  void make_room(size_t frame_bytes);

  FrameLimits limits_;
  size_t initial_bytes_;
  std::vector<uint64_t> storage_;  // uint64_t keeps frames word-aligned for Cap'n Proto
  size_t begin_ = 0;               // first unconsumed byte
  size_t end_ = 0;                 // one past the last received byte
};

}  // namespace moonseed::rpc
