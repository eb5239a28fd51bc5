// best.pt (docs/eval.md): the run keeps the checkpoint with the best evaluation return so far.
// At each checkpoint the run writes (periodic, final, and `moonseed ctl RUN checkpoint`: all go
// through Run::checkpoint), the value of the metric at that moment is compared with the best so
// far; a better one makes RUN_DIR/best.pt that checkpoint (a hard link, or a copy where links
// fail; written as best.pt.partial, then renamed; then sealed with its manifest best.pt.sum,
// engine/run/checkpoint_manifest.h, which `--checkpoint best` checks) and RUN_DIR/best.json {"metric", "value",
// "frames", "checkpoint"} (written the same way). The metric is eval_return_mean with evaluation
// envs (topology.eval_envs_per_actor > 0, V-trace or R2D2), else the training episodes'
// return_mean; before any episode ended (NaN) nothing is kept. A resumed run reads best.json and
// goes on from its value.
//
// Not thread-safe: the run's control loop owns it.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>

namespace moonseed::cli {

// RUN_DIR/best.pt
std::string best_checkpoint_path(const std::string& run_dir);

class BestCheckpoint {
 public:
  // Reads RUN_DIR/best.json when there is one (a resumed run); an unreadable one is logged and
  // ignored (the next checkpoint with a finished episode writes a new one).
  BestCheckpoint(std::string run_dir, bool eval_envs);

  const std::string& metric() const { return metric_; }
  double value() const { return value_; }  // NaN while none is kept

  // The checkpoint at `checkpoint_path` was just written with the metric at `value`: keeps it
  // when it is the best so far. True when best.pt is now that checkpoint. Throws
  // std::runtime_error when best.pt or best.json cannot be written (the old ones stay).
  bool consider(const std::string& checkpoint_path, double value, int64_t frames);

 private:
  std::string run_dir_;
  std::string metric_;
  double value_ = std::nan("");
};

}  // namespace moonseed::cli
