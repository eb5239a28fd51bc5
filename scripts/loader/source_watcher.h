// Notices when any file of a loaded experiment changes on disk: the script and
// every recipe or module it loaded. Hot reload (docs/experiments-design.md)
// polls it from the run's control loop.
//
// A file counts as changed when its modification time, size, inode or
// existence differ from the last snapshot, so in-place writes and editors
// that save by writing a new file and renaming it are both seen. A file that
// is missing mid-save is reported once it exists again.
//
// Not thread-safe; one owner polls it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace moonseed::scripts {

class SourceWatcher {
 public:
  // Snapshots `paths` now. Paths that are not files on disk (embedded library
  // modules) may be given; they never change.
  explicit SourceWatcher(std::vector<std::string> paths = {});

  // True when some file differs from the snapshot and every watched file that
  // existed before exists again (a save in progress is not reported early).
  // The snapshot is then taken anew, so one change is reported once.
  bool poll();

  // Watches a new list (after a reload the script may load other files).
  void reset(std::vector<std::string> paths);

  const std::vector<std::string>& paths() const { return paths_; }

 private:
  struct Stamp {
    bool exists = false;
    int64_t mtime_ns = 0;
    int64_t size = 0;
    uint64_t inode = 0;
    bool operator==(const Stamp& o) const {
      return exists == o.exists && mtime_ns == o.mtime_ns && size == o.size && inode == o.inode;
    }
  };
  static Stamp stamp(const std::string& path);

  std::vector<std::string> paths_;
  std::vector<Stamp> stamps_;
};

}  // namespace moonseed::scripts
