// ExperienceRecorder: the learner's writer of the experience log
// (docs/experience-log.md is the user guide, docs/experience-log-format.md the
// bytes). Complete unrolls are handed over by pointer from the thread that is
// done with them (V-trace: the prefetcher, once it has stacked them into a
// batch; R2D2: the inference thread, from an UnrollStore kept for recording),
// so the inference thread never copies or compresses for the log. The
// recorder's own thread cuts each unroll into records and appends them to an
// explog::LogWriter, whose pool compresses them and whose writer thread
// writes, syncs and publishes the segments. Records are copied once, into
// their chunk; a record at least record.chunk_kb long (Atari-sized frames)
// is not copied at all but compressed straight from the unroll, which goes
// back to its pool once compressed.
//
// Records: an unroll's steps 0..T-1 (its step T is step 0 of the slot's next
// unroll), cut wherever the episode changes, so a record never spans two
// episodes. Meta: actor and env (slot = actor * envs_per_actor + env), the
// episode id and the index of the record's first step in it, the flags
// (kIsFirst: the record starts its episode; kIsLast: its last step is the
// episode's final observation, with kTerminated or kTruncated), the wall time
// the unroll completed, and the learner step and config version when the
// recorder wrote it. Columns (one value per step, schema_for):
//   observation   the env's dtype and shape (x_t); uint8 (pixels) stored
//                 XORed with the record's step before (record.delta)
//   action        i64 (discrete) or f32[A] (box): a_t; 0 at a final observation
//   reward        f32: r_t, what a_t earned; 0 at a final observation
//   terminated    u8: a_t ended the episode by termination
//   truncated     u8: ... by truncation (time limit)
//   behaviour_logp f32: log mu(a_t | x_t) of the policy that acted
//   policy_version i64: optimizer steps of the weights that chose a_t
//   config_version i64: the hot-reload config version the actor stepped under
//   env_reward    f32: the env's own r_t, before reward shaping (the same as
//                 reward without it); absent when continuing an older log
//                 that lacks it, since a log's segments share their columns
//
// Queue: at most record.queue_mb of unrolls wait (half in the recorder's
// queue, half in the writer's). When it is full, "backpressure" blocks
// offer() (which holds training and then the actors back); "drop" drops the
// unroll and counts its steps in stats().dropped_steps.
//
// Failure: nothing here throws after construction. A directory that cannot be
// created or written, a full disk, any write error turns recording off:
// stats().error says why (naming the path, the errno text and what the log
// writer kept), the steps the writer accepted but could not make durable and
// every later unroll's are counted in stats().unrecorded_steps, and training
// goes on. Nothing is logged here: the caller reports stats().error, once.
//
// Thread-safety: every public member may be called from any thread. Lock
// order: close_mu_ -> mu_ -> the log writer's locks.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "base/mutex.h"
#include "engine/runtime/bounded_queue.h"
#include "engine/config/experiment_config.h"
#include "explog/writer.h"
#include "engine/learner/unroll_store.h"
#include "envs/spec.h"

namespace moonseed::engine {

struct RecorderStats {
  bool recording = false;        // a log is being written (false: off after an error, or closed)
  std::string directory;
  int64_t unrolls = 0;           // handed to offer()
  // Every step offered is in one of these, or still queued.
  int64_t recorded_steps = 0;    // steps accepted by the writer and not lost by it (durable, or on the way)
  int64_t dropped_steps = 0;     // steps dropped by a full queue (record.full_queue = "drop")
  int64_t unrecorded_steps = 0;  // steps recording off never wrote: offered once it was off or closed,
                                 // or accepted by the writer but lost when it failed
  int64_t queued_unrolls = 0;    // waiting in the recorder's queue
  explog::WriterStats writer;    // records written and durable, bytes raw and on disk, segments
  std::string error;             // why recording is off; empty while it works
  // CPU time of the recorder's thread and the log writer's threads so far
  // (R2D2's copy of each step on the inference thread is not in it).
  double cpu_seconds = 0;
};

class ExperienceRecorder {
 public:
  // Starts the thread and opens the log in `directory` (created if missing);
  // episode ids in the log are the store's. Throws std::invalid_argument for
  // a config the writer refuses (full_queue, codec); a directory that cannot
  // be used is not thrown but turns the recorder off (stats().error).
  // `before_chunk_write` is a test hook, run by the log's writer thread
  // before each chunk (a disk that stalls).
  ExperienceRecorder(const RecordConfig& config, const std::string& directory, const std::string& run_id,
                     const envs::EnvSpec& spec, const UnrollShape& shape, int envs_per_actor,
                     std::function<void()> before_chunk_write = {});
  ~ExperienceRecorder();  // close()

  ExperienceRecorder(const ExperienceRecorder&) = delete;
  ExperienceRecorder& operator=(const ExperienceRecorder&) = delete;

  // Takes the unroll: true when queued, false when dropped (counted).
  bool offer(UnrollPtr unroll) EXCLUDES(mu_);

  // Stamped on the records written from now on.
  void set_learner_step(int64_t step) { learner_step_.store(step, std::memory_order_relaxed); }
  void set_config_version(uint64_t version) { config_version_.store(version, std::memory_order_relaxed); }

  // Writes out what is queued, publishes the last segment and stops the
  // threads; later offers are dropped. Idempotent.
  void close() EXCLUDES(close_mu_, mu_);

  RecorderStats stats() const EXCLUDES(mu_);

  // The columns recorded for `spec` (see above) and a JSON text of the env's
  // spaces that `moonseed log merge` compares. `delta` (record.delta) stores
  // a uint8 observation with explog::ColumnFilter::kXorPrevious.
  static explog::LogSchema schema_for(const envs::EnvSpec& spec, const std::string& run_id,
                                      const std::string& codec, bool delta);
  // One more than the largest episode id in the log at `directory`; 0 when
  // there is none or it cannot be read (a resumed run continues the ids).
  static int64_t next_episode_id(const std::string& directory);

 private:
  void run() EXCLUDES(mu_);
  void record(std::shared_ptr<const Unroll> unroll) EXCLUDES(mu_);

  const bool drop_when_full_;  // record.full_queue == "drop"
  const std::string directory_;
  const UnrollShape shape_;
  const int envs_per_actor_;
  const explog::LogSchema schema_;
  std::unique_ptr<explog::LogWriter> writer_;  // null when the log could not be opened

  BoundedQueue<UnrollPtr> queue_;
  std::atomic<int64_t> learner_step_{0};
  std::atomic<uint64_t> config_version_{0};
  std::atomic<int64_t> cpu_ns_{0};  // the recorder thread's CPU time
  // Steps handed to writer_->append(), counted before each call, so that the
  // writer's lost_steps (refused or lost records) never exceeds it.
  std::atomic<int64_t> handed_steps_{0};

  mutable base::Mutex mu_;
  RecorderStats stats_ GUARDED_BY(mu_);  // recorded_steps and writer stats are made at stats()
  bool closed_ GUARDED_BY(mu_) = false;

  base::Mutex close_mu_ ACQUIRED_BEFORE(mu_);  // serializes close()
  std::thread thread_;   // last: starts after everything above exists
};

}  // namespace moonseed::engine
