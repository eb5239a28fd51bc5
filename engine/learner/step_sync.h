// StepSync: what the learner's training thread agrees on with the other ranks
// of a learner group (docs/distributed-design.md). The learner knows only this
// interface; engine/group/ implements it over c10d, and a learner without a
// group has none.
//
// Every training step of every rank is one round, in the same order on all:
//   agree(proposal)          -> the group's frames, stop, pause, config version,
//                               checkpoint (each rank then saves its part; also at stop)
//   (forward, backward)
//   average_gradients(params) -> each gradient replaced by its mean over the ranks
//   (clip, optimizer step: identical on every rank, so the weights stay equal)
//   after_step(step, hash)   -> every check_every steps the ranks compare weights
// A rank that leaves the loop (stop, or its agent closed) makes one last
// agree() with stop set, so that no rank waits for it. A rank with no batch
// ready within a short wait still takes part in the round, with zero
// gradients: a rank short of data slows no other.
//
// Threads: agree, average_gradients and after_step run on the training thread
// only. Failures: each throws GroupError naming the rank(s) and host(s) at
// fault; the learner then fails with that message and the run stops.
#pragma once

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace at {
class Tensor;
}

namespace moonseed::engine {

// The group cannot go on: a rank died, hung, or its weights differ.
class GroupError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// What this rank brings to a round.
struct StepProposal {
  int64_t frames = 0;           // env steps this rank has received
  bool stop = false;            // this rank wants the group to stop after this round
  bool paused = false;          // this rank is paused (ctl pause)
  bool has_batch = true;        // this rank has a training batch for this round
  uint64_t config_version = 0;  // rank 0: its newest hot config version; others: 0
  bool checkpoint = false;      // rank 0: a checkpoint is asked for
};

// What every rank of the group sees after a round: the same values on all.
struct StepAgreement {
  int64_t group_frames = 0;     // frames over all ranks: schedules and lr decay use these
  bool stop = false;            // no step this round: every rank leaves its training loop
  bool paused = false;          // some rank is paused: no step this round, every rank keeps its batch
  int batches = 0;              // ranks with a batch: 0 = no step this round; the gradients' mean is over these
  uint64_t config_version = 0;  // rank 0's hot config, applied by every rank before this step
  bool checkpoint = false;      // every rank saves its part of the checkpoint of the step reached so far
};

class StepSync {
 public:
  virtual ~StepSync() = default;
  virtual int rank() const = 0;
  virtual int world_size() const = 0;
  virtual StepAgreement agree(const StepProposal& proposal) = 0;
  // Replaces the gradient of each of `params` by its mean over the ranks that
  // had a batch in the round just agreed (the others bring zeros; a parameter
  // without a gradient counts as zeros).
  virtual void average_gradients(const std::vector<at::Tensor>& params) = 0;
  // After optimizer step `step` (1, 2, ...), with a hash of this rank's
  // weights when the step is a multiple of check_every() (else unused).
  virtual void after_step(int64_t step, uint64_t weights_hash) = 0;
  virtual int64_t check_every() const = 0;
};

}  // namespace moonseed::engine
