#include "engine/run/metrics_log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <thread>

#include "base/log.h"
#include "base/text.h"

namespace moonseed::engine {

MetricsRow& MetricsRow::add(const std::string& key, double value) {
  std::string encoded = "null";
  if (std::isfinite(value)) {
    encoded = base::number_text(value);  // reads back exactly; counters stay whole numbers
  }
  fields_.emplace_back(key, std::move(encoded));
  return *this;
}

MetricsRow& MetricsRow::add(const std::string& key, const std::string& value) {
  fields_.emplace_back(key, base::json_quote(value));
  return *this;
}

MetricsRow& MetricsRow::add_json(const std::string& key, std::string json) {
  fields_.emplace_back(key, std::move(json));
  return *this;
}

std::string MetricsRow::to_json() const {
  std::string out = "{";
  for (size_t i = 0; i < fields_.size(); ++i) {
    if (i) out += ", ";
    out += base::json_quote(fields_[i].first) + ": " + fields_[i].second;
  }
  return out + "}";
}

MetricsLog::MetricsLog(const std::string& path)
    : path_(path), fd_(::open(path.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644)) {
  if (fd_ < 0) throw std::runtime_error("cannot open " + path + ": " + std::strerror(errno));
  cut_torn_last_line();
}

MetricsLog::~MetricsLog() { ::close(fd_); }

// A file written by a build that appended through stdio may end in half a row
// (a full disk cut it at a buffer boundary): rows appended after it would
// share its line.
void MetricsLog::cut_torn_last_line() {
  struct stat st {};
  if (::fstat(fd_, &st) != 0 || st.st_size == 0) return;
  char c = 0;
  if (::pread(fd_, &c, 1, st.st_size - 1) != 1 || c == '\n') return;
  // Backwards a block at a time to the last newline; the torn row starts after it.
  off_t keep = 0;
  char block[4096];
  for (off_t end = st.st_size; end > 0 && keep == 0;) {
    const off_t begin = std::max<off_t>(0, end - static_cast<off_t>(sizeof block));
    const ssize_t n = ::pread(fd_, block, static_cast<size_t>(end - begin), begin);
    if (n != end - begin) return;  // unreadable: leave the file as it is
    for (ssize_t i = n - 1; i >= 0; --i) {
      if (block[i] == '\n') {
        keep = begin + i + 1;
        break;
      }
    }
    end = begin;
  }
  if (::ftruncate(fd_, keep) == 0) {
    base::log_warning("cut a torn last line (" + std::to_string(st.st_size - keep) + " bytes) off " + path_);
  }
}

bool MetricsLog::append(const MetricsRow& row) { return append_patiently(row, std::chrono::milliseconds(0), {}); }

bool MetricsLog::append_patiently(const MetricsRow& row, std::chrono::milliseconds patience,
                                  const std::function<void()>& waiting) {
  if (listener_) listener_(row);
  const std::string line = row.to_json() + "\n";
  const auto deadline = std::chrono::steady_clock::now() + patience;
  for (bool told = false;; told = true) {
    const int error = write_line(line);
    if (error == 0) {
      if (dropped_ > 0) {
        base::log_info(path_ + " is written again (" + std::to_string(dropped_) + " row(s) dropped)");
        dropped_ = 0;
      }
      return true;
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      if (dropped_ == 0) {
        base::log_warning("cannot write " + path_ + ": " + std::strerror(error) +
                          "; metrics rows are dropped until it can be written; training goes on");
      }
      ++dropped_;
      ++dropped_total_;
      return false;
    }
    if (!told && waiting) waiting();
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

int MetricsLog::write_line(const std::string& line) {
  // O_APPEND writes at the end; only this object writes the file, so the end
  // seen here is where the row starts.
  const off_t start = ::lseek(fd_, 0, SEEK_END);
  size_t done = 0;
  int error = 0;
  while (done < line.size()) {
    // One write() for the whole row; a short count (no room for the rest)
    // is followed by one for the rest, which fails and says why.
    const ssize_t n = ::write(fd_, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      error = n < 0 ? errno : ENOSPC;
      break;
    }
    done += static_cast<size_t>(n);
  }
  // Part of a row: cut back to the row's start, so the file holds whole rows only.
  if (error != 0 && done > 0 && (start < 0 || ::ftruncate(fd_, start) != 0)) {
    base::log_warning("cannot cut half a row off " + path_ + ": " + std::strerror(errno));
  }
  return error;
}

}  // namespace moonseed::engine
