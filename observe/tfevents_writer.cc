#include "observe/tfevents_writer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>

#include "base/log.h"
#include "observe/crc32c.h"
#include "observe/tensorboard.pb.h"

namespace moonseed::observe {
namespace {

constexpr size_t kMaxPending = 1 << 20;  // bytes of records kept before a write without fsync

void put_le(std::string& out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xFF));
}

std::string hostname() {
  char host[HOST_NAME_MAX + 1] = {};
  if (::gethostname(host, sizeof host - 1) != 0 || host[0] == '\0') return "localhost";
  return host;
}

tb::Event event_at(int64_t step, double wall_time) {
  tb::Event event;
  event.set_step(step);
  event.set_wall_time(wall_time);
  return event;
}

}  // namespace

std::string tfrecord(std::string_view data) {
  std::string out;
  out.reserve(data.size() + 16);
  put_le(out, data.size(), 8);
  put_le(out, masked_crc32c(out), 4);  // of the 8 length bytes
  out.append(data);
  put_le(out, masked_crc32c(data), 4);
  return out;
}

std::string TfEventsWriter::new_file_path(const std::string& dir, int64_t unix_seconds) {
  const std::string base = dir + "/events.out.tfevents." + std::to_string(unix_seconds) + "." + hostname();
  std::string path = base;
  struct stat st {};
  for (int n = 1; ::lstat(path.c_str(), &st) == 0; ++n) path = base + "." + std::to_string(n);
  return path;
}

TfEventsWriter::TfEventsWriter(const std::string& path)
    : path_(path), fd_(::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644)) {
  if (fd_ < 0) {
    fail("cannot create", errno);
    return;
  }
  struct timespec now {};
  ::clock_gettime(CLOCK_REALTIME, &now);
  tb::Event event = event_at(0, static_cast<double>(now.tv_sec) + now.tv_nsec * 1e-9);
  event.set_file_version("brain.Event:2");
  add(event.SerializeAsString());
  flush();
}

TfEventsWriter::~TfEventsWriter() {
  flush();
  if (fd_ >= 0) ::close(fd_);
}

void TfEventsWriter::scalar(const std::string& tag, int64_t step, double wall_time, double value) {
  tb::Event event = event_at(step, wall_time);
  tb::Summary::Value* v = event.mutable_summary()->add_value();
  v->set_tag(tag);
  v->set_simple_value(static_cast<float>(value));
  add(event.SerializeAsString());
}

void TfEventsWriter::text(const std::string& tag, int64_t step, double wall_time, const std::string& text) {
  tb::Event event = event_at(step, wall_time);
  tb::Summary::Value* v = event.mutable_summary()->add_value();
  v->set_tag(tag);
  v->mutable_metadata()->mutable_plugin_data()->set_plugin_name("text");
  v->mutable_metadata()->set_data_class(tb::DATA_CLASS_TENSOR);
  tb::TensorProto* tensor = v->mutable_tensor();
  tensor->set_dtype(tb::DT_STRING);
  tensor->mutable_tensor_shape();  // present and without dims: shape []
  tensor->add_string_val(text);
  add(event.SerializeAsString());
}

void TfEventsWriter::add(const std::string& event_bytes) {
  if (fd_ < 0) {
    ++dropped_;
    return;
  }
  pending_ += tfrecord(event_bytes);
  ++pending_records_;
  if (pending_.size() >= kMaxPending) write_pending();
}

bool TfEventsWriter::flush() {
  if (!write_pending()) return false;
  if (fd_ >= 0 && ::fsync(fd_) != 0) {
    fail("cannot fsync", errno);
    return false;
  }
  return ok();
}

// Writes pending_ whole, or cuts what part of it got written off the file again
// and drops it (an outage: the next write tries again).
bool TfEventsWriter::write_pending() {
  if (fd_ < 0) return false;
  if (pending_.empty()) return !failed_;
  const off_t start = ::lseek(fd_, 0, SEEK_END);
  size_t done = 0;
  while (done < pending_.size()) {
    const ssize_t n = ::write(fd_, pending_.data() + done, pending_.size() - done);
    if (n > 0) {
      done += static_cast<size_t>(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      const int error = n < 0 ? errno : ENOSPC;  // a write of 0 bytes: no room left
      // Whole records only. Should the cut fail, the file ends in a torn
      // record, which readers skip; a later record after it would be read as
      // garbage, so the writer then stays off.
      if (start >= 0 && done > 0 && !cut_to(start)) fd_broken_ = true;
      fail("cannot write", error);
      return false;
    }
  }
  pending_.clear();
  pending_records_ = 0;
  if (failed_) {
    failed_ = false;
    base::log_info("TensorBoard: writing " + path_ + " again (" + std::to_string(dropped_ - dropped_before_outage_) +
                   " records dropped while it could not be written; metrics.jsonl has their rows)");
  }
  return true;
}

bool TfEventsWriter::cut_to(off_t size) {
  if (::ftruncate(fd_, size) == 0) return true;
  base::log_warning("TensorBoard: cannot cut a torn record off " + path_ + "; no more events are written to it");
  return false;
}

void TfEventsWriter::fail(const std::string& what, int error) {
  if (!failed_) dropped_before_outage_ = dropped_;
  dropped_ += pending_records_;
  pending_records_ = 0;
  pending_.clear();
  if (fd_broken_ && fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
  if (failed_) return;
  failed_ = true;
  base::log_warning("TensorBoard: " + what + " " + path_ + " (" + std::strerror(error) + "); " +
                    (fd_ < 0 ? "no TensorBoard events are written this run"
                             : "TensorBoard events are dropped until it can be written again") +
                    " (metrics.jsonl goes on)");
}

}  // namespace moonseed::observe
