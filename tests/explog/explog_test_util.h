// Temporary directories and file surgery for the experience log tests.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "explog/reader.h"

namespace moonseed::explog::testing {

// A fresh directory under $TMPDIR (or /tmp), removed with its contents.
class TempDir {
 public:
  TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string pattern = std::string(base && *base ? base : "/tmp") + "/explog-test-XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  std::string sub(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

inline void flip_byte(const std::string& file, uint64_t offset, uint8_t mask = 0x20) {
  const int fd = ::open(file.c_str(), O_RDWR);
  if (fd < 0) throw std::runtime_error("cannot open " + file);
  uint8_t b = 0;
  if (::pread(fd, &b, 1, static_cast<off_t>(offset)) != 1) throw std::runtime_error("pread");
  b ^= mask;
  if (::pwrite(fd, &b, 1, static_cast<off_t>(offset)) != 1) throw std::runtime_error("pwrite");
  ::close(fd);
}

// Every record of a log, in order; problems met on the way are appended to *problems.
inline std::vector<Record> read_all(const LogReader& reader, std::vector<LogProblem>* problems = nullptr) {
  std::vector<Record> out;
  RecordCursor cursor = reader.scan();
  while (std::optional<Record> r = cursor.next()) out.push_back(std::move(*r));
  if (problems) problems->insert(problems->end(), cursor.problems().begin(), cursor.problems().end());
  return out;
}

inline std::vector<std::string> segment_files(const std::string& dir) {
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(dir)) files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace moonseed::explog::testing
