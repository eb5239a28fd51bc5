#include "cli/engine/actor_memory.h"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

namespace moonseed::cli {
namespace {

// The process group of process `pid` from /proc/PID/stat, or -1. The second
// field (the command) is in parentheses and may hold spaces and ')': the
// fields after it start after the last ')'.
pid_t process_group(const std::string& pid) {
  std::ifstream in("/proc/" + pid + "/stat");
  std::string stat;
  if (!std::getline(in, stat)) return -1;
  const size_t close = stat.rfind(')');
  if (close == std::string::npos) return -1;
  std::istringstream rest(stat.substr(close + 1));
  std::string state;
  long ppid = 0, pgrp = -1;
  if (!(rest >> state >> ppid >> pgrp)) return -1;
  return static_cast<pid_t>(pgrp);
}

// RssAnon of process `pid` in bytes (/proc/PID/status gives it in kB), or 0
// when it is gone or does not say (a kernel thread).
int64_t anonymous_resident_bytes(const std::string& pid) {
  std::ifstream in("/proc/" + pid + "/status");
  for (std::string line; std::getline(in, line);) {
    if (line.compare(0, 8, "RssAnon:") == 0) return std::atoll(line.c_str() + 8) * 1024;
  }
  return 0;
}

}  // namespace

std::map<pid_t, int64_t> resident_bytes_by_group(const std::vector<pid_t>& groups) {
  std::map<pid_t, int64_t> out;
  if (groups.empty()) return out;
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return out;
  while (const dirent* entry = ::readdir(proc)) {
    const char* name = entry->d_name;
    if (*name < '1' || *name > '9' || std::strspn(name, "0123456789") != std::strlen(name)) continue;
    const pid_t group = process_group(name);
    if (std::find(groups.begin(), groups.end(), group) == groups.end()) continue;
    out[group] += anonymous_resident_bytes(name);
  }
  ::closedir(proc);
  return out;
}

int64_t kernel_oom_kills() {
  std::ifstream in("/proc/vmstat");
  std::string name;
  int64_t value = 0;
  while (in >> name >> value) {
    if (name == "oom_kill") return value;
  }
  return -1;
}

std::string memory_text(int64_t bytes) {
  char text[32];
  const double mib = static_cast<double>(bytes) / (1024.0 * 1024.0);
  if (mib >= 1024) {
    std::snprintf(text, sizeof text, "%.1f GiB", mib / 1024);
  } else {
    std::snprintf(text, sizeof text, "%.0f MiB", mib);
  }
  return text;
}

}  // namespace moonseed::cli
