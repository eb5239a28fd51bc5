#include "scripts/loader/source_watcher.h"

#include <sys/stat.h>

namespace moonseed::scripts {

SourceWatcher::SourceWatcher(std::vector<std::string> paths) { reset(std::move(paths)); }

void SourceWatcher::reset(std::vector<std::string> paths) {
  paths_ = std::move(paths);
  stamps_.clear();
  for (const std::string& p : paths_) stamps_.push_back(stamp(p));
}

SourceWatcher::Stamp SourceWatcher::stamp(const std::string& path) {
  Stamp s;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return s;
  s.exists = true;
  s.mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  s.size = static_cast<int64_t>(st.st_size);
  s.inode = static_cast<uint64_t>(st.st_ino);
  return s;
}

bool SourceWatcher::poll() {
  std::vector<Stamp> now;
  now.reserve(paths_.size());
  bool changed = false;
  for (size_t i = 0; i < paths_.size(); ++i) {
    now.push_back(stamp(paths_[i]));
    // Gone for now: an editor between unlink and rename. Wait for it.
    if (stamps_[i].exists && !now[i].exists) return false;
    if (!(now[i] == stamps_[i])) changed = true;
  }
  if (changed) stamps_ = std::move(now);
  return changed;
}

}  // namespace moonseed::scripts
