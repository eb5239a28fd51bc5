#include "rpc/frame_reader.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace moonseed::rpc {
namespace {

size_t words_for(size_t bytes) { return (bytes + sizeof(uint64_t) - 1) / sizeof(uint64_t); }

}  // namespace

FrameReader::FrameReader(const FrameLimits& limits, size_t initial_bytes)
    : limits_(limits), initial_bytes_(std::max<size_t>(initial_bytes, 64)) {
  storage_.resize(words_for(initial_bytes_));
}

FrameReader::Next FrameReader::next() {
  Next out;
  if (begin_ == end_) {
    begin_ = end_ = 0;
    // A one-off huge frame should not pin its buffer for the connection's life.
    if (capacity() > 16 * initial_bytes_) {
      std::vector<uint64_t>(words_for(initial_bytes_)).swap(storage_);
    }
  }
  const uint8_t* start = base() + begin_;
  const FrameExtent extent = frame_extent(start, end_ - begin_, limits_);
  if (extent.status == FrameExtent::Status::kInvalid) {
    out.status = Next::Status::kInvalid;
    out.error = extent.error;
    return out;
  }
  if (extent.status == FrameExtent::Status::kKnown && extent.bytes <= end_ - begin_) {
    out.status = Next::Status::kFrame;
    out.data = start;
    out.size = extent.bytes;
    begin_ += extent.bytes;
    return out;
  }
  make_room(extent.bytes);
  return out;
}

void FrameReader::make_room(size_t frame_bytes) {
  const size_t pending = end_ - begin_;
  if (frame_bytes <= capacity()) {
    // It fits: move the partial frame to the front only when the rest would
    // not fit behind it.
    if (begin_ + frame_bytes <= capacity()) return;
    std::memmove(base(), base() + begin_, pending);
  } else {
    // Larger than the buffer: grow only once the bytes have filled it, so a
    // frame size that a peer claims costs nothing until the peer sends it.
    // Doubling amortises the copies; the last step lands on the frame size.
    if (end_ < capacity()) return;
    std::vector<uint64_t> grown(words_for(std::min(frame_bytes, 2 * capacity())));
    std::memcpy(grown.data(), base() + begin_, pending);
    storage_.swap(grown);
  }
  begin_ = 0;
  end_ = pending;
}

void FrameReader::set_limits(const FrameLimits& limits, size_t initial_bytes) {
  limits_ = limits;
  initial_bytes_ = std::max<size_t>(initial_bytes, 64);
}

uint8_t* FrameReader::write_ptr() { return base() + end_; }

size_t FrameReader::writable() const { return capacity() - end_; }

void FrameReader::commit(size_t bytes) {
  if (bytes > writable()) {
    throw std::logic_error("FrameReader::commit(" + std::to_string(bytes) + ") but only " +
                           std::to_string(writable()) + " bytes were writable");
  }
  end_ += bytes;
}

}  // namespace moonseed::rpc
