// The directory of one run: resolved config, metrics, checkpoints, actor logs.
//
// Layout (docs/architecture.md): RUN/config.lua, RUN/metrics.jsonl,
// RUN/checkpoints/ckpt-<step>.pt, RUN/actors/actor-<id>.log.
//
// Checkpoints: ckpt-<step>.pt may have companions beside it, files named
// ckpt-<step>.pt<suffix> (R2D2's ".replay"). The learner writes every
// companion before the .pt file (each as NAME.partial, then renamed), so a
// .pt is the last of its checkpoint's data files to appear; then it seals the
// checkpoint with its manifest ckpt-<step>.pt.sum (engine/run/checkpoint_manifest.h),
// a companion too. A checkpoint is complete when its .pt, the companions its
// algorithm names and its manifest are all there; a checkpoint without a
// manifest is one of an older build (complete) when no older checkpoint has
// one, else a save interrupted before its manifest (incomplete). A kill
// mid-save leaves .partial files, or companions without their .pt, which
// remove_unfinished_checkpoint_files() and prune_checkpoints() delete.
//
// Not thread-safe; the learner's control thread owns it, and nothing else
// writes its checkpoints/ while it prunes.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace moonseed::engine {

class RunDirectory {
 public:
  // Creates RUNS_DIR/NAME-YYYYmmdd-HHMMSS (with -2, -3... if taken) and its
  // subdirectories. Throws std::runtime_error naming the path and errno text.
  static RunDirectory create(const std::string& runs_dir, const std::string& name);
  // Makes PATH (and its parents) a run directory, or takes it as one when it
  // is there already: a rank of a learner group other than 0 keeps its files
  // in a directory its rank 0 names. Throws std::runtime_error as create().
  static RunDirectory create_at(const std::string& path);
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

  // Checkpoints (.pt files) present, oldest first (by step number).
  std::vector<std::string> checkpoints() const;
  // The newest complete checkpoint: every companion in `companions` (suffixes
  // of its path, e.g. ".replay") beside it, and its manifest (see above); ""
  // when there is none. Nothing is read: verify_checkpoint checks the content.
  std::string newest_checkpoint(const std::vector<std::string>& companions = {}) const;
  // What a checkpoint or rank part (a path checkpoints() or rank_parts_until()
  // gives) lacks to be complete, as paths separated by ", ": its companions
  // missing, and its manifest FILE.sum when an older file of its kind has
  // one. "" when it is complete.
  std::string missing_files(const std::string& file, const std::vector<std::string>& companions) const;
  // Deletes all but the newest `keep` checkpoints, each .pt first and then its
  // companions, then what remove_unfinished_checkpoint_files() deletes.
  void prune_checkpoints(int keep) const;
  // Deletes what interrupted saves left in checkpoints/: ckpt-*.partial files,
  // and companions whose .pt is missing. Returns their file names. Call it
  // only while no checkpoint is being written.
  std::vector<std::string> remove_unfinished_checkpoint_files() const;

  // A learner group's rank parts (docs/distributed-design.md "Checkpoints"):
  // what each rank alone holds of the group's checkpoint of step S, in that
  // rank's own directory: checkpoints/rank-S.part (its counters, the part's
  // last data file), companions rank-S.part<suffix> (R2D2: .replay) and, last,
  // its manifest rank-S.part.sum.
  std::string rank_part_path(int64_t step) const;
  // The rank parts of steps at or before `at_most_step`, newest first.
  std::vector<std::string> rank_parts_until(int64_t at_most_step) const;
  // The newest of them ("" if none).
  std::string newest_rank_part(int64_t at_most_step) const;
  // Keeps the newest `keep` parts; deletes the others, the companions of a
  // part whose .part is missing, and .partial files of interrupted saves.
  void prune_rank_parts(int keep) const;

  // Writes `content` to RUN/name via a .partial file, fsync, rename and fsync
  // of the directory (write_file_durably), so a crash leaves either the old or
  // the new file, never half of one.
  void write_file_atomic(const std::string& name, const std::string& content) const;

 private:
  explicit RunDirectory(std::string path) : path_(std::move(path)) {}
  // checkpoints/PREFIX<step>SUFFIX as (step, path), oldest first.
  std::vector<std::pair<int64_t, std::string>> numbered_files(const std::string& prefix,
                                                              const std::string& suffix) const;
  std::string path_;
};

}  // namespace moonseed::engine
