#include "engine/run/checkpoint_manifest.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "explog/format.h"

namespace moonseed::engine {
namespace fs = std::filesystem;

namespace {

const char* const kHeader = "# moonseed checkpoint manifest 1: CRC-32C size name";

std::string hex(uint32_t crc) {
  char text[16];
  std::snprintf(text, sizeof text, "%08x", crc);
  return text;
}

std::runtime_error errno_error(const std::string& doing, int error) {
  return std::runtime_error("cannot " + doing + ": " + std::strerror(error));
}

void fsync_directory(const std::string& path, const std::string& after) {
  std::string dir = fs::path(path).parent_path().string();
  if (dir.empty()) dir = ".";
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0 || ::fsync(fd) != 0) {
    const int error = errno;
    if (fd >= 0) ::close(fd);
    throw errno_error("fsync directory " + dir + " after " + after, error);
  }
  ::close(fd);
}

// The damage of one file against its record, "" when it matches.
std::string damage_of(const std::string& dir, const ManifestEntry& recorded, const std::string& manifest) {
  const std::string path = dir + "/" + recorded.name;
  std::error_code ec;
  if (!fs::exists(path, ec)) return path + " is missing (its manifest " + manifest + " lists it)";
  ManifestEntry actual;
  try {
    actual = checksum_file(path);
  } catch (const std::exception& e) {
    return e.what();
  }
  if (actual.size != recorded.size) {
    return path + " is " + std::to_string(actual.size) + " bytes, its manifest records " +
           std::to_string(recorded.size) + "; it was truncated or overwritten after it was written";
  }
  if (actual.crc32c != recorded.crc32c) {
    return "CRC-32C mismatch in " + path + " (file 0x" + hex(actual.crc32c) + ", recorded 0x" +
           hex(recorded.crc32c) + "; " + std::to_string(actual.size) + " bytes); it was damaged after it was written";
  }
  return "";
}

}  // namespace

std::string manifest_path(const std::string& file) { return file + ".sum"; }

std::string manifest_text(const std::vector<ManifestEntry>& entries) {
  std::string text = std::string(kHeader) + "\n";
  for (const ManifestEntry& e : entries) text += hex(e.crc32c) + " " + std::to_string(e.size) + " " + e.name + "\n";
  return text;
}

std::vector<ManifestEntry> parse_manifest(const std::string& text, const std::string& path) {
  std::vector<ManifestEntry> entries;
  std::istringstream in(text);
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (line.empty() || line[0] == '#') continue;
    const auto bad = [&] {
      return std::runtime_error("checkpoint manifest " + path + " is corrupt: line " + std::to_string(number) +
                                " is not \"CRC-32C SIZE NAME\": " + line);
    };
    const size_t first = line.find(' ');
    const size_t second = first == std::string::npos ? std::string::npos : line.find(' ', first + 1);
    if (second == std::string::npos || first != 8 || second + 1 >= line.size()) throw bad();
    const std::string crc = line.substr(0, first);
    const std::string size = line.substr(first + 1, second - first - 1);
    if (crc.find_first_not_of("0123456789abcdef") != std::string::npos || size.empty() ||
        size.size() > 19 || size.find_first_not_of("0123456789") != std::string::npos) {
      throw bad();
    }
    ManifestEntry e;
    e.crc32c = static_cast<uint32_t>(std::stoul(crc, nullptr, 16));
    e.size = std::stoull(size);
    e.name = line.substr(second + 1);
    if (e.name.find('/') != std::string::npos) throw bad();
    entries.push_back(std::move(e));
  }
  if (entries.empty()) throw std::runtime_error("checkpoint manifest " + path + " is corrupt: it lists no file");
  return entries;
}

ManifestEntry checksum_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw errno_error("read " + path, errno);
  ManifestEntry e;
  e.name = fs::path(path).filename().string();
  std::vector<char> block(1 << 20);
  for (;;) {
    const ssize_t n = ::read(fd, block.data(), block.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int error = errno;
      ::close(fd);
      throw errno_error("read " + path, error);
    }
    if (n == 0) break;
    e.crc32c = explog::crc32c(block.data(), static_cast<size_t>(n), e.crc32c);
    e.size += static_cast<uint64_t>(n);
  }
  ::close(fd);
  return e;
}

void write_file_durably(const std::string& path, const std::string& content) {
  const std::string tmp = path + ".partial";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw errno_error("write " + tmp, errno);
  const auto fail = [&](const std::string& doing, int error) {
    ::unlink(tmp.c_str());
    return errno_error(doing + " " + tmp, error);
  };
  size_t done = 0;
  while (done < content.size()) {
    const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int error = errno;
      ::close(fd);
      throw fail("write", error);
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) {
    const int error = errno;
    ::close(fd);
    throw fail("sync", error);
  }
  if (::close(fd) != 0) throw fail("sync", errno);
  if (::rename(tmp.c_str(), path.c_str()) != 0) throw fail("rename", errno);
  fsync_directory(path, "writing " + path);
}

void seal_checkpoint(const std::string& file, const std::vector<std::string>& companions) {
  std::vector<ManifestEntry> entries{checksum_file(file)};
  for (const std::string& suffix : companions) entries.push_back(checksum_file(file + suffix));
  write_file_durably(manifest_path(file), manifest_text(entries));
}

void unseal_checkpoint(const std::string& file) {
  const std::string manifest = manifest_path(file);
  if (::unlink(manifest.c_str()) != 0) {
    if (errno == ENOENT) return;
    throw errno_error("remove " + manifest + " before " + file + " is written again", errno);
  }
  fsync_directory(manifest, "removing " + manifest);
}

CheckpointCheck verify_checkpoint(const std::string& file, bool companions) {
  CheckpointCheck check;
  const std::string manifest = manifest_path(file);
  std::error_code ec;
  if (!fs::exists(manifest, ec)) return check;
  check.sealed = true;
  std::ifstream in(manifest, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  if (!in.good() && !in.eof()) {
    check.damage = "its manifest " + manifest + " cannot be read";
    return check;
  }
  std::vector<ManifestEntry> entries;
  try {
    entries = parse_manifest(text.str(), manifest);
  } catch (const std::exception& e) {
    check.damage = e.what();
    return check;
  }
  const std::string name = fs::path(file).filename().string();
  bool listed = false;
  for (const ManifestEntry& e : entries) listed = listed || e.name == name;
  if (!listed) {
    check.damage = "its manifest " + manifest + " does not list " + name;
    return check;
  }
  const std::string dir = fs::path(file).parent_path().string();
  for (const ManifestEntry& e : entries) {
    if (!companions && e.name != name) continue;
    check.damage = damage_of(dir.empty() ? "." : dir, e, manifest);
    if (!check.damage.empty()) break;
  }
  return check;
}

}  // namespace moonseed::engine
