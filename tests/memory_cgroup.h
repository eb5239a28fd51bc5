// A memory cgroup for the tests of memory running out: made under the test's
// own cgroup with a memory limit (and no swap), processes moved into it, the
// kernel's OOM killer acting inside it alone, removed at the end. Works with
// cgroup v1 (the memory controller at /sys/fs/cgroup/memory) and v2 (the
// unified hierarchy); making one needs root (or a delegated cgroup). A test
// that cannot make one skips with error():
//
//   MemoryCgroup cgroup;
//   if (!cgroup.make("moonseed-oom-test", 600 << 20)) GTEST_SKIP() << cgroup.error();
//   ... sh -c 'echo $$ > PROCS; exec moonseed run ...' with PROCS = cgroup.procs_file()
//
// Header-only, so that tests of any folder use it without linking anything.
#pragma once

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

namespace moonseed::testing {

class MemoryCgroup {
 public:
  MemoryCgroup() = default;
  ~MemoryCgroup() { remove(); }
  MemoryCgroup(const MemoryCgroup&) = delete;
  MemoryCgroup& operator=(const MemoryCgroup&) = delete;

  // A cgroup `name` (made unique with this process's pid) beside nothing else
  // under this process's own memory cgroup, limited to `limit_bytes` of memory
  // and none of swap. False, with error() saying why, when it cannot be made.
  bool make(const std::string& name, int64_t limit_bytes) {
    const std::string own_v1 = own_cgroup("memory");
    const std::string unique = name + "-" + std::to_string(::getpid());
    if (!own_v1.empty() && std::filesystem::exists("/sys/fs/cgroup/memory/cgroup.procs")) {
      if (!make_dir("/sys/fs/cgroup/memory" + own_v1 + "/" + unique)) return false;
      // The memory limit first: memsw (memory + swap) may never be below it.
      if (!write("memory.limit_in_bytes", std::to_string(limit_bytes))) return false;
      if (std::filesystem::exists(path_ + "/memory.memsw.limit_in_bytes")) {
        write("memory.memsw.limit_in_bytes", std::to_string(limit_bytes));
      }
      return true;
    }
    if (std::filesystem::exists("/sys/fs/cgroup/cgroup.controllers")) {
      const std::string parent = "/sys/fs/cgroup" + own_cgroup("");
      if (!append_file(parent + "/cgroup.subtree_control", "+memory")) {
        error_ = "cannot enable the memory controller under " + parent + " (" + std::strerror(errno) +
                 "): this test needs root or a delegated cgroup";
        return false;
      }
      if (!make_dir(parent + "/" + unique)) return false;
      if (!write("memory.max", std::to_string(limit_bytes))) return false;
      if (std::filesystem::exists(path_ + "/memory.swap.max")) write("memory.swap.max", "0");
      return true;
    }
    error_ = "no memory cgroup controller is mounted (neither /sys/fs/cgroup/memory nor cgroup v2)";
    return false;
  }

  // Writing a pid here moves that process (and the children it starts later) into the cgroup.
  std::string procs_file() const { return path_ + "/cgroup.procs"; }
  const std::string& error() const { return error_; }

  // Waits up to 10 s for its processes to end (the kernel moves nothing out
  // by itself), then removes the cgroup.
  void remove() {
    if (path_.empty()) return;
    for (int i = 0; i < 200 && ::rmdir(path_.c_str()) != 0 && errno == EBUSY; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    path_.clear();
  }

 private:
  // This process's cgroup path in the v1 hierarchy of `controller`, or in the
  // v2 one for "": the third field of its line in /proc/self/cgroup.
  static std::string own_cgroup(const std::string& controller) {
    std::ifstream in("/proc/self/cgroup");
    for (std::string line; std::getline(in, line);) {
      const size_t first = line.find(':');
      const size_t second = line.find(':', first + 1);
      if (first == std::string::npos || second == std::string::npos) continue;
      const std::string controllers = line.substr(first + 1, second - first - 1);
      const bool match = controller.empty() ? line.compare(0, 3, "0::") == 0 : controllers == controller;
      if (match) {
        const std::string path = line.substr(second + 1);
        return path == "/" ? "" : path;
      }
    }
    return "";
  }

  bool make_dir(const std::string& dir) {
    if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
      error_ = "cannot make the cgroup " + dir + " (" + std::strerror(errno) + "): this test needs root";
      return false;
    }
    path_ = dir;
    return true;
  }

  static bool append_file(const std::string& file, const std::string& text) {
    std::ofstream out(file);
    out << text;
    out.flush();
    return static_cast<bool>(out);
  }

  bool write(const std::string& file, const std::string& text) {
    if (append_file(path_ + "/" + file, text)) return true;
    error_ = "cannot write " + text + " to " + path_ + "/" + file + " (" + std::strerror(errno) + ")";
    return false;
  }

  std::string path_;
  std::string error_;
};

}  // namespace moonseed::testing
