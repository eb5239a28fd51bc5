// LogWriter: records unrolls into an experience log directory
// (docs/experience-log-format.md) without holding up the thread that appends.
//
// Pipeline: append() copies a record into the chunk being built, in a bounded
// queue (capacity in records and bytes, counted until the record is written);
// a record of at least chunk_target_bytes that comes with a keepalive is
// referenced instead, as a chunk of its own. Compressor threads compress each
// chunk once it reaches chunk_target_bytes (or is due: age, flush, close, a
// blocked appender); one writer
// thread writes the chunks in append order to NAME-000001.mslog.partial,
// fsyncs on a time/byte budget, and rolls the segment by size or age: footer,
// fsync, rename to NAME-000001.mslog, fsync of the directory. Segment numbers
// continue after the highest one already in the directory, so a restarted
// learner never overwrites an earlier log.
//
// When the queue is full, FullQueuePolicy::kDrop drops the record and counts
// it (stats().dropped); kBackpressure blocks append() until there is room.
// Records the writer cannot make durable (it failed, or was closed) are
// counted apart, as lost.
//
// Durability: stats().durable_records / durable_bytes say how much is on disk
// and synced; a record is synced at most sync_interval after it was appended
// (plus the time to compress and write it), or sooner when sync_bytes have
// been written. flush() waits until everything appended before it is durable.
//
// Failure: a directory that cannot be created or written at construction is
// a std::runtime_error naming the path and the errno text (a segment file
// created but left without a whole header is removed first). After
// construction no I/O error is thrown: the first one (ENOSPC, EFBIG, EIO...)
// turns the writer off. The segment being written is then published with
// what it holds whole: cut back to the end of its last complete chunk,
// given its footer if that fits, synced and renamed to NAME-N.mslog either
// way (a segment without a whole chunk is removed); if that fails too it
// stays .partial, which readers also read up to its last whole chunk.
// stats().error names the file, the errno text and what became of the
// segment; every record not in the published segment, as well as every
// later append, is counted as lost. Nothing is logged: the caller reports
// stats().error. Nothing blocks forever: a failed writer wakes blocked
// appenders and flushes.
// A record that does not match the schema is a caller bug: append() throws
// std::invalid_argument naming the column.
//
// Thread-safety: append, flush, stats and close may be called from any
// thread. Lock order: close_mu_ -> mu_.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/mutex.h"
#include "explog/format.h"

namespace moonseed::explog {

enum class FullQueuePolicy { kDrop, kBackpressure };

struct WriterOptions {
  std::string directory;                  // created if missing
  std::string name = "experience";        // segment file prefix
  size_t chunk_target_bytes = 1u << 20;   // uncompressed bytes per chunk (a chunk may hold more)
  size_t queue_max_records = 4096;
  size_t queue_max_bytes = 256u << 20;
  FullQueuePolicy full_queue = FullQueuePolicy::kDrop;
  int compress_threads = 1;
  int lz4_acceleration = 1;  // LZ4_compress_fast's: 1 compresses best, higher is faster
  uint64_t segment_max_bytes = 256ull << 20;  // roll when a segment reaches this; 0: never
  int64_t segment_max_age_ms = 0;             // roll a segment this old; 0: never
  int64_t sync_interval_ms = 1000;            // fsync at least this often while data is unsynced
  uint64_t sync_bytes = 16ull << 20;          // ... and after this many bytes written

  // Test hooks. clock_ns: a monotonic clock for segment ages (default: steady
  // clock). before_chunk_write: runs on the writer thread before each chunk is
  // written (a slow disk, or a latch that holds the writer).
  std::function<int64_t()> clock_ns;
  std::function<void()> before_chunk_write;
};

struct WriterStats {
  // Once the writer is closed, appended = durable_records + dropped + lost.
  uint64_t appended = 0;         // append() calls, dropped and lost ones included
  uint64_t written = 0;          // records written to a segment file (maybe not yet synced)
  uint64_t durable_records = 0;  // records written and synced
  uint64_t durable_steps = 0;    // the steps of those records
  uint64_t durable_bytes = 0;    // file bytes written and synced, over all segments
  uint64_t dropped = 0;          // records refused by a full queue (FullQueuePolicy::kDrop)
  uint64_t lost = 0;             // records never made durable: the writer failed, or was closed
  uint64_t lost_steps = 0;       // the steps of those records
  uint64_t bytes_raw = 0;        // uncompressed record bytes written (meta + columns)
  uint64_t bytes_disk = 0;       // file bytes written (headers, chunks, footers)
  uint64_t segments = 0;         // segments published (renamed to .mslog)
  double cpu_seconds = 0;        // CPU time of the compression and writer threads so far
  std::string error;             // empty while the writer works
};

class LogWriter {
 public:
  // Validates the schema and options (std::invalid_argument), creates the
  // directory and the first segment (std::runtime_error naming the path).
  LogWriter(const LogSchema& schema, WriterOptions options);
  ~LogWriter();  // close()

  LogWriter(const LogWriter&) = delete;
  LogWriter& operator=(const LogWriter&) = delete;

  // True when the record was queued, false when it was dropped (full queue
  // under kDrop, writer off or closed).
  bool append(Record&& record) EXCLUDES(mu_);
  // The same without a Record: copies meta.steps steps of every column,
  // columns[c] pointing at meta.steps x schema.columns[c].step_bytes() bytes,
  // straight into the chunk being built (one copy, no allocation once warm).
  // With a `keepalive`, a record of at least chunk_target_bytes is not copied
  // at all: it becomes a chunk of its own, compressed where it is, and
  // `keepalive` is held until then (so the bytes must not change while it is
  // held); smaller records are copied and `keepalive` is released at once.
  bool append(const RecordMeta& meta, const uint8_t* const* columns,
              std::shared_ptr<const void> keepalive = nullptr) EXCLUDES(mu_);

  // Blocks until every record accepted before the call is durable. False when
  // the writer is off (stats().error says why) or closed.
  bool flush() EXCLUDES(mu_);

  // Drains the queue, writes and publishes the last segment, stops the
  // threads. Idempotent; later appends are dropped.
  void close() EXCLUDES(close_mu_, mu_);

  WriterStats stats() const EXCLUDES(mu_);
  const LogSchema& schema() const { return schema_; }

 private:
  struct EncodedChunk {
    std::vector<uint8_t> bytes;  // the chunk is its first `size` bytes (a reused buffer)
    size_t size = 0;
    ChunkSummary summary;
    uint64_t raw_bytes = 0;
    uint64_t steps = 0;
  };

  // What became of the open segment after a failure (salvage_segment).
  struct Salvage {
    std::string note;        // appended to the error: what was kept, or why it stays .partial
    bool synced = false;     // the whole chunks written so far are now durable
    bool published = false;  // renamed to its final name
  };

  // Both append()s: takes mu_, waits for room or drops, adds to open_.
  bool append_locked(const RecordMeta& meta, const uint8_t* const* columns, size_t bytes,
                     std::shared_ptr<const void> keepalive) EXCLUDES(mu_);
  bool admissible(size_t bytes) const REQUIRES(mu_);
  bool should_cut() const REQUIRES(mu_);
  void cut_open() REQUIRES(mu_);  // open_ (not empty) -> full_
  void compress_loop() EXCLUDES(mu_);
  void write_loop() EXCLUDES(mu_);
  // Writer thread only, after salvage_segment(): turns the writer off with
  // `message` (the failure and what became of the segment).
  void fail(const std::string& message, const Salvage& salvage) REQUIRES(mu_);
  void note_synced() REQUIRES(mu_);  // writer thread
  void account_disk(uint64_t bytes) EXCLUDES(mu_);

  // Writer thread only (and the constructor, before the threads start), with
  // mu_ let go: they write files. Each returns an error message, empty on success.
  std::string open_segment() EXCLUDES(mu_);
  std::string write_chunk(const EncodedChunk& chunk) EXCLUDES(mu_);
  std::string sync_segment() EXCLUDES(mu_);
  std::string publish_segment() EXCLUDES(mu_);
  Salvage salvage_segment() EXCLUDES(mu_);
  int64_t now_ns() const;
  // Adds the calling thread's CPU time since `mark` to cpu_ns_ and moves `mark` on.
  void charge_cpu(int64_t& mark);

  const LogSchema schema_;
  const WriterOptions options_;
  const std::vector<uint8_t> file_header_;

  base::Mutex close_mu_ ACQUIRED_BEFORE(mu_);  // serializes close()
  bool closed_ GUARDED_BY(close_mu_) = false;

  mutable base::Mutex mu_;
  base::CondVar work_cv_;     // compressors: records to cut, closing, failure
  base::CondVar write_cv_;    // writer: an encoded chunk, flush, closing, failure
  base::CondVar space_cv_;    // blocked appenders: room in the queue
  base::CondVar durable_cv_;  // flush(): durable_ moved
  // Records accepted and not yet cut into a chunk are in open_ (since
  // open_since_); an appender that fills open_ to chunk_target_bytes cuts it
  // into full_ (with its sequence number); compressors take full_ first, and
  // cut open_ themselves when should_cut() for another reason (age, flush,
  // close, room). Builders and chunk buffers are recycled, not freed.
  ChunkBuilder open_ GUARDED_BY(mu_);
  std::chrono::steady_clock::time_point open_since_ GUARDED_BY(mu_);
  std::deque<std::pair<uint64_t, ChunkBuilder>> full_ GUARDED_BY(mu_);
  std::vector<ChunkBuilder> spare_builders_ GUARDED_BY(mu_);
  std::vector<std::vector<uint8_t>> spare_buffers_ GUARDED_BY(mu_);
  int blocked_appenders_ GUARDED_BY(mu_) = 0;  // appenders waiting for room (kBackpressure)
  uint64_t inflight_records_ GUARDED_BY(mu_) = 0;  // accepted, not yet written or dropped
  uint64_t inflight_bytes_ GUARDED_BY(mu_) = 0;
  uint64_t accepted_ GUARDED_BY(mu_) = 0;
  uint64_t accepted_steps_ GUARDED_BY(mu_) = 0;
  uint64_t cut_records_ GUARDED_BY(mu_) = 0;
  uint64_t flush_target_ GUARDED_BY(mu_) = 0;  // accepted_ of the latest flush() still waiting
  uint64_t next_cut_seq_ GUARDED_BY(mu_) = 0;
  uint64_t next_write_seq_ GUARDED_BY(mu_) = 0;
  std::map<uint64_t, EncodedChunk> encoded_ GUARDED_BY(mu_);  // by sequence number, waiting to be written
  int active_compressors_ GUARDED_BY(mu_) = 0;
  bool closing_ GUARDED_BY(mu_) = false;
  bool failed_ GUARDED_BY(mu_) = false;
  std::string encode_error_ GUARDED_BY(mu_);  // a compressor's; the writer thread fails on it
  WriterStats stats_ GUARDED_BY(mu_);

  // Writer thread only:
  int fd_ = -1;
  int segment_number_ = 0;
  std::string segment_path_;  // the .partial path while open
  uint64_t segment_offset_ = 0;
  int64_t segment_opened_ns_ = 0;
  std::vector<ChunkSummary> segment_chunks_;
  uint64_t unsynced_bytes_ = 0;
  uint64_t unsynced_records_ = 0;
  uint64_t unsynced_steps_ = 0;
  std::chrono::steady_clock::time_point last_sync_;

  std::atomic<int64_t> cpu_ns_{0};  // charge_cpu, from every thread of the writer

  std::vector<std::thread> compressors_;
  std::thread writer_;
};

}  // namespace moonseed::explog
