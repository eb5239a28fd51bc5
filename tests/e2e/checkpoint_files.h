// What the checkpoint tests read from a real run directory: checkpoints loaded
// back by a Learner built from the run's own config.lua (as --resume would),
// metrics.jsonl rows with their strings, and the names that appear in a
// directory as they appear (inotify).
//
// Not thread-safe; each test owns its objects.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "tests/e2e/process.h"

namespace moonseed::testing {

// The shipped examples the checkpoint tests run (MOONSEED_SOURCE_DIR: the e2e targets').
inline const std::string kR2d2Example = std::string(MOONSEED_SOURCE_DIR) + "/examples/cartpole_r2d2.lua";
inline const std::string kVtraceExample = std::string(MOONSEED_SOURCE_DIR) + "/examples/cartpole_vtrace.lua";

// What one checkpoint holds, read back as --resume reads it.
struct HeldCheckpoint {
  int64_t optimizer_steps = 0;
  int64_t frames = 0;
  double replay_size = -1;  // R2D2's sequences in the replay; -1 for V-trace
  uint64_t weights_hash = 0;  // Learner::weights_hash of the restored weights
};

// Restores `checkpoint` into a Learner made from RUN_DIR/config.lua. Throws
// what the restore throws (CheckpointError for a file that does not load).
HeldCheckpoint load_checkpoint(const std::string& run_dir, const std::string& checkpoint);

// RUN_DIR/checkpoints/ckpt-N.pt paths, oldest (smallest N) first.
std::vector<std::string> checkpoint_paths(const std::string& run_dir);

// Damages a LibTorch archive (a checkpoint, a replay) as bit rot would and so
// that LibTorch still reads it: flips one exponent bit of the first value of
// its first tensor record (a float32's high byte, little-endian; x16 or /16).
// Throws std::runtime_error when the file has no tensor record.
void flip_a_tensor_exponent(const std::string& archive);

// Copies a run directory's regular files and its checkpoints/ (not sockets)
// to `to`, a fresh directory: one real run serves several tests.
void copy_run_directory(const std::string& from, const std::string& to);

// File names in `dir`, sorted.
std::vector<std::string> file_names(const std::string& dir);

// The step in "ckpt-STEP.pt", or -1 for another name.
int64_t checkpoint_step(const std::string& name);

// The newest RUN_DIR/checkpoints/ckpt-N.pt that has ckpt-N.pt.replay and its
// manifest ckpt-N.pt.sum beside it (a complete R2D2 checkpoint of this build),
// as a path; "" when there is none.
std::string newest_complete_r2d2_checkpoint(const std::string& run_dir);

// One metrics.jsonl line: its numbers, and its strings `event` and `checkpoint`.
struct MetricsLine {
  std::string text;
  MetricsRow numbers;
  std::string event;       // "" for a tick row
  std::string checkpoint;  // of a "resume" row
};
std::vector<MetricsLine> read_metrics_lines(const std::string& path);
// The rows whose event is `event`, in order.
std::vector<MetricsLine> events(const std::vector<MetricsLine>& lines, const std::string& event);

// How many times `needle` occurs in `text`.
size_t count(const std::string& text, const std::string& needle);

// The names of files created in, or renamed into, one directory, in the order
// they appeared (inotify IN_CREATE | IN_MOVED_TO). Throws when the directory
// cannot be watched.
class DirectoryWatch {
 public:
  explicit DirectoryWatch(const std::string& dir);
  ~DirectoryWatch();
  DirectoryWatch(const DirectoryWatch&) = delete;
  DirectoryWatch& operator=(const DirectoryWatch&) = delete;

  // The next name that appeared, waiting up to `timeout_s` for one; nullopt on timeout.
  std::optional<std::string> next(double timeout_s);

 private:
  int fd_;
  std::deque<std::string> pending_;
};

}  // namespace moonseed::testing
