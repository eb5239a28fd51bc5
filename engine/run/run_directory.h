// The directory of one run: resolved config, metrics, checkpoints, actor logs.
//
// Layout (docs/architecture.md): RUN/config.lua, RUN/metrics.jsonl,
// RUN/checkpoints/ckpt-<step>.pt, RUN/actors/actor-<id>.log.
// Not thread-safe; the learner's control thread owns it.
#pragma once

#include <string>
#include <vector>

namespace moonseed::engine {

class RunDirectory {
 public:
  // Creates RUNS_DIR/NAME-YYYYmmdd-HHMMSS (with -2, -3... if taken) and its
  // subdirectories. Throws std::runtime_error naming the path and errno text.
  static RunDirectory create(const std::string& runs_dir, const std::string& name);
  // Opens an existing run directory (for --resume). Throws when it is missing
  // or has no config.lua.
  static RunDirectory open(const std::string& path);

  const std::string& path() const { return path_; }
  // Last path component, used as the run id.
  std::string run_id() const;
  std::string config_path() const { return path_ + "/config.lua"; }
  std::string metrics_path() const { return path_ + "/metrics.jsonl"; }
  std::string checkpoints_dir() const { return path_ + "/checkpoints"; }
  std::string actor_log_path(int actor_id) const;
  std::string checkpoint_path(int64_t step) const;

  // Checkpoints present, oldest first (by step number).
  std::vector<std::string> checkpoints() const;
  // The newest checkpoint, or "" when there is none.
  std::string newest_checkpoint() const;
  // Deletes all but the newest `keep` checkpoints (and the R2D2 replay file beside each).
  void prune_checkpoints(int keep) const;

  // Writes `content` to RUN/name via a .partial file, fsync and rename, so a
  // crash leaves either the old or the new file, never half of one.
  void write_file_atomic(const std::string& name, const std::string& content) const;

 private:
  explicit RunDirectory(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

}  // namespace moonseed::engine
