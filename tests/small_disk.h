// A small tmpfs for the tests of a full disk: mounted on a directory, filled
// to its last byte on demand, unmounted at the end. Mounting needs root (or
// CAP_SYS_ADMIN); a test that cannot mount skips with mount_error():
//
//   SmallDisk disk;
//   if (!disk.mount(dir + "/disk", "4m")) GTEST_SKIP() << disk.mount_error();
//
// Header-only, so that tests of any folder use it without linking anything.
#pragma once

#include <fcntl.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>

namespace moonseed::testing {

class SmallDisk {
 public:
  SmallDisk() = default;
  ~SmallDisk() { unmount(); }
  SmallDisk(const SmallDisk&) = delete;
  SmallDisk& operator=(const SmallDisk&) = delete;

  // Creates `dir` and mounts a tmpfs of `size` ("4m", "256k") on it; false
  // (and mount_error() says why) when mounting is refused.
  bool mount(const std::string& dir, const std::string& size) {
    std::filesystem::create_directories(dir);
    if (::mount("tmpfs", dir.c_str(), "tmpfs", 0, ("size=" + size).c_str()) != 0) {
      error_ = "cannot mount a tmpfs on " + dir + " (" + std::strerror(errno) +
               "): the full-disk test needs root (or CAP_SYS_ADMIN)";
      return false;
    }
    path_ = dir;
    return true;
  }

  // Lazily when something still holds it (a child being killed): it goes once that lets go.
  void unmount() {
    if (path_.empty()) return;
    if (::umount(path_.c_str()) != 0) ::umount2(path_.c_str(), MNT_DETACH);
    path_.clear();
  }

  // A new size for the mounted tmpfs; throws std::runtime_error naming the errno text.
  void resize(const std::string& size) const {
    if (::mount("tmpfs", path_.c_str(), "tmpfs", MS_REMOUNT, ("size=" + size).c_str()) != 0) {
      throw std::runtime_error("cannot remount " + path_ + ": " + std::strerror(errno));
    }
  }

  // Fills the disk to its last byte with one file, `filler`: big writes, then
  // ever smaller ones. Throws std::runtime_error when the file cannot be created.
  void fill() const {
    const std::string filler = path_ + "/filler";
    const int fd = ::open(filler.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) throw std::runtime_error("cannot create " + filler + ": " + std::strerror(errno));
    const std::string block(1 << 16, 'x');
    for (size_t size = block.size(); size > 0; size /= 2) {
      while (::write(fd, block.data(), size) == static_cast<ssize_t>(size)) {
      }
    }
    ::close(fd);
  }

  const std::string& path() const { return path_; }  // "" while not mounted
  const std::string& mount_error() const { return error_; }

 private:
  std::string path_;
  std::string error_;
};

}  // namespace moonseed::testing
