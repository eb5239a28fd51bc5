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

// What one checkpoint holds, read back as --resume reads it.
struct HeldCheckpoint {
  int64_t optimizer_steps = 0;
  int64_t frames = 0;
  double replay_size = -1;  // R2D2's sequences in the replay; -1 for V-trace
};

// Restores `checkpoint` into a Learner made from RUN_DIR/config.lua. Throws
// what the restore throws (CheckpointError for a file that does not load).
HeldCheckpoint load_checkpoint(const std::string& run_dir, const std::string& checkpoint);

// File names in `dir`, sorted.
std::vector<std::string> file_names(const std::string& dir);

// The step in "ckpt-STEP.pt", or -1 for another name.
int64_t checkpoint_step(const std::string& name);

// The newest RUN_DIR/checkpoints/ckpt-N.pt that has ckpt-N.pt.replay beside
// it (a complete R2D2 checkpoint), as a path; "" when there is none.
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
