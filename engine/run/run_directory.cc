#include "engine/run/run_directory.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <stdexcept>

#include "engine/run/checkpoint_manifest.h"

namespace moonseed::engine {
namespace fs = std::filesystem;

namespace {

std::string timestamp() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%d-%H%M%S", &tm);
  return buf;
}

void make_dir(const std::string& path) {
  std::error_code ec;
  fs::create_directories(path, ec);
  if (ec) throw std::runtime_error("cannot create directory " + path + ": " + ec.message());
}

// "ckpt-123.pt" -> 123 (a rank part's "rank-123.part" with those), anything else -> -1.
int64_t checkpoint_step(const std::string& filename, const std::string& prefix = "ckpt-",
                        const std::string& suffix = ".pt") {
  if (filename.size() <= prefix.size() + suffix.size()) return -1;
  if (filename.compare(0, prefix.size(), prefix) != 0) return -1;
  if (filename.compare(filename.size() - suffix.size(), suffix.size(), suffix) != 0) return -1;
  std::string digits = filename.substr(prefix.size(), filename.size() - prefix.size() - suffix.size());
  if (digits.empty() || !std::all_of(digits.begin(), digits.end(), ::isdigit)) return -1;
  return std::stoll(digits);
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// "ckpt-123.pt.replay" -> "ckpt-123.pt"; "" for a name that is no checkpoint's companion.
std::string companion_of(const std::string& filename) {
  const size_t dot = filename.find(".pt.");
  if (dot == std::string::npos) return "";
  std::string checkpoint = filename.substr(0, dot + 3);
  return checkpoint_step(checkpoint) >= 0 ? checkpoint : "";
}

}  // namespace

RunDirectory RunDirectory::create(const std::string& runs_dir, const std::string& name) {
  make_dir(runs_dir);
  const std::string base = runs_dir + "/" + name + "-" + timestamp();
  std::string path = base;
  // mkdir (not create_directories) so that two runs started in the same second
  // cannot both claim one directory.
  for (int n = 2; ::mkdir(path.c_str(), 0755) != 0; ++n) {
    if (errno != EEXIST) {
      throw std::runtime_error("cannot create run directory " + path + ": " + std::strerror(errno));
    }
    path = base + "-" + std::to_string(n);
  }
  RunDirectory dir(fs::absolute(path).string());
  make_dir(dir.checkpoints_dir());
  make_dir(dir.path_ + "/actors");
  return dir;
}

RunDirectory RunDirectory::create_at(const std::string& path) {
  std::error_code ec;
  fs::create_directories(path, ec);
  if (ec) throw std::runtime_error("cannot create run directory " + path + ": " + ec.message());
  RunDirectory dir(fs::absolute(path).lexically_normal().string());
  make_dir(dir.checkpoints_dir());
  make_dir(dir.path_ + "/actors");
  return dir;
}

RunDirectory RunDirectory::open(const std::string& path) {
  if (!fs::is_directory(path)) throw std::runtime_error("run directory " + path + " does not exist");
  RunDirectory dir(fs::absolute(path).lexically_normal().string());
  while (dir.path_.size() > 1 && dir.path_.back() == '/') dir.path_.pop_back();
  if (!fs::exists(dir.config_path())) {
    throw std::runtime_error(path + " is not a run directory: it has no config.lua");
  }
  make_dir(dir.checkpoints_dir());
  make_dir(dir.path_ + "/actors");
  return dir;
}

std::string RunDirectory::run_id() const { return fs::path(path_).filename().string(); }

std::string RunDirectory::actor_log_path(int actor_id) const {
  return path_ + "/actors/actor-" + std::to_string(actor_id) + ".log";
}

std::string RunDirectory::checkpoint_path(int64_t step) const {
  return checkpoints_dir() + "/ckpt-" + std::to_string(step) + ".pt";
}

std::vector<std::pair<int64_t, std::string>> RunDirectory::numbered_files(const std::string& prefix,
                                                                         const std::string& suffix) const {
  std::vector<std::pair<int64_t, std::string>> found;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(checkpoints_dir(), ec)) {
    const int64_t step = checkpoint_step(entry.path().filename().string(), prefix, suffix);
    if (step >= 0) found.emplace_back(step, entry.path().string());
  }
  std::sort(found.begin(), found.end());
  return found;
}

std::vector<std::string> RunDirectory::checkpoints() const {
  std::vector<std::string> paths;
  for (auto& f : numbered_files("ckpt-", ".pt")) paths.push_back(std::move(f.second));
  return paths;
}

std::string RunDirectory::newest_checkpoint(const std::vector<std::string>& companions) const {
  const std::vector<std::string> all = checkpoints();
  for (auto it = all.rbegin(); it != all.rend(); ++it) {
    if (missing_files(*it, companions).empty()) return *it;
  }
  return "";
}

std::string RunDirectory::missing_files(const std::string& file, const std::vector<std::string>& companions) const {
  std::error_code ec;
  std::string missing;
  const auto lack = [&](const std::string& path) { missing += (missing.empty() ? "" : ", ") + path; };
  for (const std::string& suffix : companions) {
    if (!fs::is_regular_file(file + suffix, ec)) lack(file + suffix);
  }
  if (fs::exists(manifest_path(file), ec)) return missing;
  // No manifest: a save interrupted before it when an older file of the same
  // kind has one (this build seals every checkpoint), else an older build's.
  const std::string name = fs::path(file).filename().string();
  const bool part = name.compare(0, 5, "rank-") == 0;
  const std::string prefix = part ? "rank-" : "ckpt-";
  const std::string suffix = part ? ".part" : ".pt";
  const int64_t step = checkpoint_step(name, prefix, suffix);
  for (const auto& [older, path] : numbered_files(prefix, suffix)) {
    if (older < step && fs::exists(manifest_path(path), ec)) {
      lack(manifest_path(file));
      break;
    }
  }
  return missing;
}

std::string RunDirectory::rank_part_path(int64_t step) const {
  return checkpoints_dir() + "/rank-" + std::to_string(step) + ".part";
}

std::vector<std::string> RunDirectory::rank_parts_until(int64_t at_most_step) const {
  const auto parts = numbered_files("rank-", ".part");
  std::vector<std::string> out;
  for (auto it = parts.rbegin(); it != parts.rend(); ++it) {
    if (it->first <= at_most_step) out.push_back(it->second);
  }
  return out;
}

std::string RunDirectory::newest_rank_part(int64_t at_most_step) const {
  const std::vector<std::string> parts = rank_parts_until(at_most_step);
  return parts.empty() ? "" : parts.front();
}

void RunDirectory::prune_rank_parts(int keep) const {
  const auto parts = numbered_files("rank-", ".part");
  std::error_code ec;
  for (size_t i = 0; i + static_cast<size_t>(std::max(keep, 1)) < parts.size(); ++i) fs::remove(parts[i].second, ec);
  // Then every file of a part whose .part is gone (pruned above, or never
  // written: a save interrupted), and what a save left half written.
  std::vector<std::string> doomed;
  for (const auto& entry : fs::directory_iterator(checkpoints_dir(), ec)) {
    const std::string name = entry.path().filename().string();
    if (name.compare(0, 5, "rank-") != 0) continue;
    const size_t dot = name.find(".part");
    const std::string part = dot == std::string::npos ? "" : name.substr(0, dot + 5);
    const bool ours = checkpoint_step(part, "rank-", ".part") >= 0;
    if (ours && (ends_with(name, ".partial") || !fs::exists(checkpoints_dir() + "/" + part, ec))) {
      doomed.push_back(entry.path().string());
    }
  }
  for (const std::string& path : doomed) fs::remove(path, ec);
}

void RunDirectory::prune_checkpoints(int keep) const {
  const std::vector<std::string> all = checkpoints();
  for (size_t i = 0; i + static_cast<size_t>(std::max(keep, 1)) < all.size(); ++i) {
    // The .pt first: a kill in between leaves companions without a checkpoint
    // (removed below, or at the next start), never a checkpoint without them.
    std::error_code ec;
    fs::remove(all[i], ec);
  }
  remove_unfinished_checkpoint_files();
}

std::vector<std::string> RunDirectory::remove_unfinished_checkpoint_files() const {
  std::vector<std::string> doomed;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(checkpoints_dir(), ec)) {
    const std::string name = entry.path().filename().string();
    if (name.compare(0, 5, "ckpt-") != 0) continue;  // not ours
    const std::string checkpoint = companion_of(name);
    const bool partial = ends_with(name, ".partial");
    const bool orphan = !checkpoint.empty() && !fs::exists(checkpoints_dir() + "/" + checkpoint, ec);
    if (partial || orphan) doomed.push_back(name);
  }
  std::vector<std::string> removed;
  for (const std::string& name : doomed) {
    if (fs::remove(checkpoints_dir() + "/" + name, ec)) removed.push_back(name);
  }
  std::sort(removed.begin(), removed.end());
  return removed;
}

void RunDirectory::write_file_atomic(const std::string& name, const std::string& content) const {
  write_file_durably(path_ + "/" + name, content);
}

}  // namespace moonseed::engine
