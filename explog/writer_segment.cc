// LogWriter's segment files (explog/writer.h): opening NAME-N.mslog.partial,
// appending chunks, fsync, publishing it by rename, and salvaging what a
// failed write left (cut to its last whole chunk). The writer's threads and
// queue are in writer.cc.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <string>

#include "explog/writer.h"
#include "explog/writer_segment.h"

namespace moonseed::explog {
namespace {

namespace fs = std::filesystem;
using SteadyClock = std::chrono::steady_clock;

const char kSegmentSuffix[] = ".mslog";
const char kPartialSuffix[] = ".partial";

std::string errno_text(int err) { return std::strerror(err); }

// Writes all of `data`; returns 0 or the errno of the failing write.
int write_fully(int fd, const uint8_t* data, size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
  return 0;
}

// Empty on success, else a message naming the directory.
std::string fsync_directory(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return "cannot open directory " + dir + ": " + errno_text(errno);
  std::string error;
  if (::fsync(fd) != 0) error = "cannot fsync directory " + dir + ": " + errno_text(errno);
  ::close(fd);
  return error;
}

}  // namespace

namespace detail {

// The number N of a file NAME-N.mslog or NAME-N.mslog.partial, else 0.
int segment_number_of(const std::string& file, const std::string& name) {
  const std::string prefix = name + "-";
  if (file.compare(0, prefix.size(), prefix) != 0) return 0;
  size_t pos = prefix.size();
  int number = 0;
  size_t digits = 0;
  while (pos < file.size() && file[pos] >= '0' && file[pos] <= '9' && digits < 9) {
    number = number * 10 + (file[pos] - '0');
    ++pos;
    ++digits;
  }
  const std::string rest = file.substr(pos);
  if (digits < 6 || (rest != kSegmentSuffix && rest != std::string(kSegmentSuffix) + kPartialSuffix)) {
    return 0;
  }
  return number;
}

}  // namespace detail

std::string LogWriter::open_segment() {
  char number[16];
  std::snprintf(number, sizeof(number), "%06d", ++segment_number_);
  segment_path_ = (fs::path(options_.directory) / (options_.name + "-" + number + kSegmentSuffix))
                      .string() + kPartialSuffix;
  segment_offset_ = 0;
  segment_chunks_.clear();
  fd_ = ::open(segment_path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd_ < 0) return "cannot create " + segment_path_ + ": " + errno_text(errno);
  if (const int err = write_fully(fd_, file_header_.data(), file_header_.size())) {
    return "cannot write " + segment_path_ + ": " + errno_text(err);
  }
  account_disk(file_header_.size());
  segment_offset_ = file_header_.size();
  segment_opened_ns_ = now_ns();
  unsynced_bytes_ += file_header_.size();
  // The new directory entry must survive a crash, or the synced chunks are lost with it.
  return fsync_directory(options_.directory);
}

std::string LogWriter::write_chunk(const EncodedChunk& chunk) {
  if (fd_ < 0) {
    const std::string error = open_segment();
    if (!error.empty()) return error;
  }
  if (const int err = write_fully(fd_, chunk.bytes.data(), chunk.size)) {
    return "cannot write " + segment_path_ + ": " + errno_text(err);
  }
  account_disk(chunk.size);
  segment_chunks_.push_back(chunk.summary);
  segment_chunks_.back().offset = segment_offset_;
  segment_offset_ += chunk.size;
  unsynced_bytes_ += chunk.size;
  unsynced_records_ += chunk.summary.record_count;
  unsynced_steps_ += chunk.steps;
  return "";
}

std::string LogWriter::sync_segment() {
  if (::fdatasync(fd_) != 0) return "cannot fsync " + segment_path_ + ": " + errno_text(errno);
  last_sync_ = SteadyClock::now();
  return "";
}

std::string LogWriter::publish_segment() {
  const std::vector<uint8_t> footer = encode_footer(segment_chunks_, segment_offset_);
  if (const int err = write_fully(fd_, footer.data(), footer.size())) {
    return "cannot write " + segment_path_ + ": " + errno_text(err);
  }
  account_disk(footer.size());
  unsynced_bytes_ += footer.size();
  if (::fsync(fd_) != 0) return "cannot fsync " + segment_path_ + ": " + errno_text(errno);
  last_sync_ = SteadyClock::now();
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) return "cannot close " + segment_path_ + ": " + errno_text(errno);
  const std::string final_path =
      segment_path_.substr(0, segment_path_.size() - (sizeof(kPartialSuffix) - 1));
  if (::rename(segment_path_.c_str(), final_path.c_str()) != 0) {
    return "cannot rename " + segment_path_ + " to " + final_path + ": " + errno_text(errno);
  }
  segment_path_.clear();
  return fsync_directory(options_.directory);
}

LogWriter::Salvage LogWriter::salvage_segment() {
  Salvage out;
  if (fd_ < 0) return out;  // none open, or it failed past the point of repair (the error says where)
  const int fd = fd_;
  fd_ = -1;
  const std::string partial = segment_path_;
  if (segment_chunks_.empty()) {
    // Not one whole chunk (a header cut short at most): nothing to keep.
    ::close(fd);
    if (::unlink(partial.c_str()) != 0) {
      out.note = "; " + partial + " is left behind: cannot remove it: " + errno_text(errno);
      return out;
    }
    segment_path_.clear();
    fsync_directory(options_.directory);
    return out;
  }
  // A failed write may have left part of a chunk, or of the footer, after the
  // last whole chunk: cut back there, then the footer if it fits.
  std::string why;  // empty while the segment can still be published
  bool footer_written = false;
  if (::ftruncate(fd, static_cast<off_t>(segment_offset_)) != 0) {
    why = "cannot cut it back to offset " + std::to_string(segment_offset_) + ": " + errno_text(errno);
  } else {
    const std::vector<uint8_t> footer = encode_footer(segment_chunks_, segment_offset_);
    footer_written = ::lseek(fd, static_cast<off_t>(segment_offset_), SEEK_SET) >= 0 &&
                     write_fully(fd, footer.data(), footer.size()) == 0;
    if (footer_written) {
      account_disk(footer.size());
      unsynced_bytes_ += footer.size();
    } else if (::ftruncate(fd, static_cast<off_t>(segment_offset_)) != 0) {
      why = "cannot cut off its unfinished footer: " + errno_text(errno);
    }
  }
  if (why.empty()) {
    if (::fsync(fd) == 0) {
      out.synced = true;
    } else {
      why = "cannot fsync it: " + errno_text(errno);
    }
  }
  if (::close(fd) != 0 && why.empty()) why = "cannot close it: " + errno_text(errno);
  const std::string final_path = partial.substr(0, partial.size() - (sizeof(kPartialSuffix) - 1));
  if (why.empty() && ::rename(partial.c_str(), final_path.c_str()) != 0) {
    why = "cannot rename it to " + final_path + ": " + errno_text(errno);
  }
  const std::string kept = std::to_string(segment_chunks_.size()) + " whole chunks";
  if (!why.empty()) {
    out.note = "; " + partial + " stays .partial with its " + kept + ": " + why;
    return out;
  }
  segment_path_.clear();
  fsync_directory(options_.directory);
  out.published = true;
  out.note = "; " + final_path + " keeps its " + kept + (footer_written ? "" : " (no room for its footer)");
  return out;
}

}  // namespace moonseed::explog
