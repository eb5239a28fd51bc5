// The write side of a Session (rpc/session.h): direct writes from service
// threads, the queue behind them, and the strand's gathered async writes.
#include <sys/socket.h>

#include <cerrno>
#include <utility>

#include "rpc/session.h"

namespace moonseed::rpc::detail {
namespace {

constexpr size_t kMaxSpareFrames = 16;

// A view of a contiguous run of buffers: async_write copies its buffer
// sequence, and copying this costs no allocation, unlike a std::vector.
struct GatherView {
  const asio::const_buffer* first;
  const asio::const_buffer* last;
  const asio::const_buffer* begin() const { return first; }
  const asio::const_buffer* end() const { return last; }
};

}  // namespace

bool Session::try_write_now(const Message& message) {
  base::MutexLock lock(write_mu_);
  if (!direct_ok_) return false;  // not active (yet or any more): the strand decides
  if (write_in_flight_ || !queued_.empty()) {
    // Behind what is pending, in call order: a later message of this thread
    // must never overtake this one through the direct path.
    queue_locked(message);
    if (!write_in_flight_) post_start_write();
    return true;
  }
  encode(message, direct_frame_);
  const uint8_t* data = direct_frame_.data();
  size_t left = direct_frame_.size();
  while (left > 0) {
    const ssize_t n = ::send(direct_fd_, data, left, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n > 0) {
      data += n;
      left -= static_cast<size_t>(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      break;  // socket buffer full or an error: the strand's async_write takes over
    }
  }
  if (left > 0) {
    queued_.emplace_back(data, data + left);
    post_start_write();
  }
  return true;
}

void Session::post_start_write() {
  asio::post(socket_.get_executor(), [self = shared_from_this()] {
    base::MutexLock lock(self->write_mu_);
    if (self->state_ != State::kClosed && !self->write_in_flight_ && !self->queued_.empty()) {
      self->start_write_locked();
    }
  });
}

void Session::allow_direct_writes(bool allow) {
  base::MutexLock lock(write_mu_);
  direct_ok_ = allow;
  direct_fd_ = allow ? static_cast<int>(socket_.native_handle()) : -1;
}

void Session::enqueue(const Message& message) {
  base::MutexLock lock(write_mu_);
  queue_locked(message);
  if (!write_in_flight_) start_write_locked();
}

void Session::queue_locked(const Message& message) {
  std::vector<uint8_t> frame;
  if (!spare_.empty()) {
    frame = std::move(spare_.back());
    spare_.pop_back();
  }
  encode(message, frame);
  queued_.push_back(std::move(frame));
}

void Session::start_write_locked() {
  writing_.swap(queued_);  // writing_ is empty whenever no write is in flight
  gather_.clear();
  for (const auto& frame : writing_) gather_.push_back(asio::buffer(frame));
  write_in_flight_ = true;
  asio::async_write(socket_, GatherView{gather_.data(), gather_.data() + gather_.size()},
                    [self = shared_from_this()](const std::error_code& error, size_t) {
                      self->on_written(error);
                    });
}

void Session::on_written(const std::error_code& error) {
  base::MutexLock lock(write_mu_);
  write_in_flight_ = false;
  for (auto& frame : writing_) {
    if (spare_.size() < kMaxSpareFrames) spare_.push_back(std::move(frame));
  }
  writing_.clear();
  if (state_ == State::kClosed) return;
  if (error) {
    lock.unlock();
    if (state_ != State::kClosing) close_reason_ = "write error: " + error.message();
    finish_close();
    return;
  }
  if (!queued_.empty()) {
    start_write_locked();
  } else if (state_ == State::kClosing) {
    lock.unlock();
    // kClosing always has a Bye queued (a close without one finishes at once):
    // it is out now, so end our side (FIN after it) and wait for the actor's EOF.
    std::error_code ignored;
    socket_.shutdown(asio::socket_base::shutdown_send, ignored);
    if (!reading_) read();
  }
}

}  // namespace moonseed::rpc::detail
