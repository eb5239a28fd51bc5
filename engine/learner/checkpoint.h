// Learner checkpoints: the model's parameters and buffers, the optimizer's
// state (e.g. Adam moments) and the run's counters, in one file written by
// torch::serialize archives. Counters added after format 1 first shipped
// (trained_frames, eval_episodes, train_s) are optional keys: older files load
// with 0 (train_s: with their elapsed_s).
//
// Crash safety: save_checkpoint writes PATH.partial, fsyncs it, renames it over
// PATH and fsyncs the directory, so PATH is always either the previous complete
// checkpoint or the new complete one; a crash mid-write leaves at most a stale
// PATH.partial, which the next save overwrites.
//
// Failures are CheckpointError (a std::runtime_error) with the path and the
// reason: I/O errors when saving; a missing, truncated or corrupt file, a file
// that is not a Moonseed checkpoint, a model whose parameter names or shapes
// differ from the saved ones, or a different optimizer kind when loading. A
// failed load leaves the model untouched.
//
// Not thread-safe with respect to the model and optimizer: call under the
// weights lock (or from the only thread that touches them).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

#include <torch/torch.h>

#include "engine/learner/stats.h"

namespace moonseed::engine {

class CheckpointError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Writes `archive` to PATH crash-safely: PATH.partial, fsync, rename over PATH,
// fsync of the directory, so PATH is always the old complete file or the new
// one. On failure (a full disk included) PATH.partial is removed and
// CheckpointError names the file and the reason ("No space left on device");
// no exception escapes LibTorch's zip writer, whose destructor would abort the
// process. `what` names the file's kind in the message ("checkpoint",
// "replay checkpoint").
void write_archive_atomically(torch::serialize::OutputArchive& archive, const std::string& path,
                              const std::string& what);

// The first line of a LibTorch error (the rest is a C++ backtrace).
std::string short_reason(const c10::Error& e);

void save_checkpoint(const std::string& path, const torch::nn::Module& model,
                     const torch::optim::Optimizer& optimizer, const Counters& counters);

// Restores model parameters/buffers (copied in place, so tensors the optimizer
// or other threads hold stay valid) and optimizer state; returns the counters.
// The optimizer must be built over model.parameters() in the same order as the
// one that was saved. Tensors land on the device of the model's parameters.
Counters load_checkpoint(const std::string& path, torch::nn::Module& model,
                         torch::optim::Optimizer& optimizer);

// The model's parameters and buffers alone (no optimizer: `moonseed export`),
// from the saved model or, with `part`, from its submodule of that name (R2D2's
// "online"). Errors and guarantees as load_checkpoint.
Counters load_checkpoint_model(const std::string& path, torch::nn::Module& model, const std::string& part = "");

// A learner group's rank part (docs/distributed-design.md "Checkpoints"): this
// rank's own counters (frames, episodes... it received; the optimizer step of
// the group's checkpoint it belongs to), in a file of their own, crash-safe as
// save_checkpoint. load_rank_counters throws CheckpointError for a missing,
// corrupt or foreign file, or another rank's.
void save_rank_counters(const std::string& path, const Counters& counters, int rank);
Counters load_rank_counters(const std::string& path, int rank);

}  // namespace moonseed::engine
