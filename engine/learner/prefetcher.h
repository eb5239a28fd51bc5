// Prefetcher: the learner's prefetch thread. It pops B completed unrolls from
// the unroll FIFO, stacks them time-major into an UnrollBatch ([T+1, B, ...],
// in pinned memory when the device is CUDA), copies it to the training device
// and pushes it into a small batch queue that the training thread pops. The
// unrolls go back to their pool as soon as they are stacked.
//
// Ownership: the unroll queue is borrowed (the inference thread pushes into
//   it) and must outlive the Prefetcher; the batch queue and the thread are
//   owned.
// Sink: when given one, every unroll goes to it once the prefetcher is done
//   with it (the experience recorder), instead of straight back to its pool:
//   after it is stacked, and at shutdown the unrolls of a last partial batch
//   and those still in the queue (recorded, never trained on). The sink runs
//   on the prefetch thread and may block (backpressure).
// Shutdown: close the unroll queue. The thread collates what still makes a
//   full batch, drops a last partial batch (counted in stats), closes the
//   batch queue and exits. stop() (and the destructor) closes both queues and
//   joins, so it never waits for unrolls that will not come.
// Failure: an unroll of the wrong shape is a bug upstream; the thread stops,
//   closes both queues and next() rethrows the error (std::logic_error).
// Thread-safety: next(), batches() and stats() from any thread; stop() from
//   one thread (the owner's).
#pragma once

#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <chrono>
#include <optional>
#include <thread>
#include <vector>

#include <torch/torch.h>

#include "base/mutex.h"
#include "engine/runtime/bounded_queue.h"
#include "engine/learner/unroll_batch.h"
#include "engine/learner/unroll_store.h"

namespace moonseed::engine {

// Stacks `unrolls` (all of `shape`) into a time-major batch on the CPU:
// observations [T+1, B, obs...] float32 or uint8, actions [T+1, B] int64 or
// [T+1, B, A] float32, the rest [T+1, B]; frames counts valid steps t < T.
// Pinned host memory when `pin_memory` (needs a CUDA build of LibTorch).
// Throws std::invalid_argument for an empty list and std::logic_error for an
// unroll whose sizes do not match `shape`.
UnrollBatch collate_unrolls(const std::vector<UnrollPtr>& unrolls, const UnrollShape& shape,
                            bool pin_memory);

struct PrefetcherStats {
  int64_t batches = 0;          // collated (a batch is counted just before it is queued)
  int64_t unrolls = 0;          // collated
  int64_t frames = 0;           // sum of UnrollBatch::frames
  int64_t dropped_unrolls = 0;  // left in a partial batch at shutdown
};

using UnrollSink = std::function<void(UnrollPtr)>;

class Prefetcher {
 public:
  // Starts the thread, collating `batch_size` unrolls of `shape` per batch.
  // Throws std::invalid_argument for batch_size < 1 or batch_capacity < 1.
  Prefetcher(BoundedQueue<UnrollPtr>& unrolls, const UnrollShape& shape, int batch_size,
             const torch::Device& device, size_t batch_capacity = 2, UnrollSink sink = {});
  // stop().
  ~Prefetcher();

  Prefetcher(const Prefetcher&) = delete;
  Prefetcher& operator=(const Prefetcher&) = delete;

  // The next batch, already on the device; blocks while none is ready. An
  // empty optional once the prefetcher has stopped and its batches are taken.
  // Rethrows the error that stopped the thread, if one did.
  std::optional<UnrollBatch> next() EXCLUDES(error_mu_);
  // The same, giving up (an empty optional) after `timeout`.
  std::optional<UnrollBatch> next_for(std::chrono::milliseconds timeout) EXCLUDES(error_mu_);

  // Closes both queues and joins the thread: unrolls not yet collated stay in
  // the unroll queue, batches already queued can still be taken with next().
  // Idempotent.
  void stop();

  // The queue next() pops from (for waiting with pop_for, or size()).
  BoundedQueue<UnrollBatch>& batches() { return batches_; }

  PrefetcherStats stats() const;

 private:
  void run() EXCLUDES(error_mu_);
  void hand_over(std::vector<UnrollPtr>& unrolls);  // to sink_ (when set); leaves `unrolls` empty

  const UnrollShape shape_;
  const int batch_size_;
  const torch::Device device_;
  BoundedQueue<UnrollPtr>& unrolls_;
  BoundedQueue<UnrollBatch> batches_;
  const UnrollSink sink_;

  std::atomic<int64_t> batches_made_{0};
  std::atomic<int64_t> unrolls_collated_{0};
  std::atomic<int64_t> frames_{0};
  std::atomic<int64_t> dropped_unrolls_{0};

  mutable base::Mutex error_mu_;
  std::exception_ptr error_ GUARDED_BY(error_mu_);  // set once, by the thread

  std::thread thread_;  // last: starts after every member above exists
};

}  // namespace moonseed::engine
