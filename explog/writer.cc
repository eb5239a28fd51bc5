// LogWriter (explog/writer.h): the queue, the compress and write threads,
// cuts, flush and close. Its segment files are in writer_segment.cc.
#include "explog/writer.h"

#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <system_error>

#include "base/thread_name.h"
#include "explog/writer_segment.h"

namespace moonseed::explog {
namespace {

namespace fs = std::filesystem;
using SteadyClock = std::chrono::steady_clock;

constexpr size_t kMaxChunkTarget = 512u << 20;
constexpr size_t kMaxRecordBytes = 512u << 20;

void validate_options(const WriterOptions& o) {
  auto bad = [](const std::string& what) { throw std::invalid_argument("LogWriter: " + what); };
  if (o.directory.empty()) bad("directory is empty");
  if (o.name.empty() || o.name.find('/') != std::string::npos) bad("bad name '" + o.name + "'");
  if (o.chunk_target_bytes == 0 || o.chunk_target_bytes > kMaxChunkTarget) {
    bad("chunk_target_bytes " + std::to_string(o.chunk_target_bytes) + " is not in [1, 512 MiB]");
  }
  if (o.queue_max_records == 0) bad("queue_max_records is 0");
  if (o.queue_max_bytes == 0) bad("queue_max_bytes is 0");
  if (o.lz4_acceleration < 1 || o.lz4_acceleration > 65537) {
    bad("lz4_acceleration " + std::to_string(o.lz4_acceleration) + " is not in [1, 65537]");
  }
  if (o.compress_threads < 1 || o.compress_threads > 64) {
    bad("compress_threads " + std::to_string(o.compress_threads) + " is not in [1, 64]");
  }
  if (o.segment_max_age_ms < 0) bad("segment_max_age_ms " + std::to_string(o.segment_max_age_ms));
  if (o.sync_interval_ms < 1) bad("sync_interval_ms " + std::to_string(o.sync_interval_ms));
}

}  // namespace

LogWriter::LogWriter(const LogSchema& schema, WriterOptions options)
    : schema_(schema),
      options_(std::move(options)),
      file_header_(encode_file_header(schema_)),
      open_(schema_) {
  validate_options(options_);
  std::error_code ec;
  fs::create_directories(options_.directory, ec);
  if (ec) {
    throw std::runtime_error("experience log: cannot create directory " + options_.directory +
                             ": " + ec.message());
  }
  for (const auto& entry : fs::directory_iterator(options_.directory, ec)) {
    segment_number_ =
        std::max(segment_number_, detail::segment_number_of(entry.path().filename().string(), options_.name));
  }
  if (ec) {
    throw std::runtime_error("experience log: cannot list directory " + options_.directory + ": " +
                             ec.message());
  }
  last_sync_ = SteadyClock::now();
  const std::string error = open_segment();
  if (!error.empty()) {
    // A segment without a whole chunk is removed, so a full disk leaves no empty .partial behind.
    throw std::runtime_error("experience log: " + error + salvage_segment().note);
  }
  active_compressors_ = options_.compress_threads;
  for (int i = 0; i < options_.compress_threads; ++i) {
    compressors_.emplace_back([this] {
      base::set_thread_name("ms-log-compress");
      compress_loop();
    });
  }
  writer_ = std::thread([this] {
    base::set_thread_name("ms-log-write");
    write_loop();
  });
}

LogWriter::~LogWriter() {
  close();
  if (fd_ >= 0) ::close(fd_);  // left open by a failure
}

bool LogWriter::admissible(size_t bytes) const {
  return inflight_records_ == 0 || (inflight_records_ + 1 <= options_.queue_max_records &&
                                    inflight_bytes_ + bytes <= options_.queue_max_bytes);
}

bool LogWriter::should_cut() const {
  if (open_.empty()) return false;
  return closing_ || open_.raw_bytes() >= options_.chunk_target_bytes || blocked_appenders_ > 0 ||
         flush_target_ > cut_records_ || inflight_records_ >= options_.queue_max_records ||
         inflight_bytes_ >= options_.queue_max_bytes ||
         SteadyClock::now() >= open_since_ + std::chrono::milliseconds(options_.sync_interval_ms);
}

void LogWriter::cut_open() {
  cut_records_ += open_.record_count();
  full_.emplace_back(next_cut_seq_++, std::move(open_));
  if (spare_builders_.empty()) {
    open_ = ChunkBuilder(schema_);
  } else {
    open_ = std::move(spare_builders_.back());  // keeps its buffers' capacity
    spare_builders_.pop_back();
  }
}

bool LogWriter::append(Record&& record) {
  validate_record(schema_, record);
  std::vector<const uint8_t*> columns(record.columns.size());
  for (size_t c = 0; c < columns.size(); ++c) columns[c] = record.columns[c].data();
  return append_locked(record.meta, columns.data(), record_raw_bytes(record), nullptr);
}

bool LogWriter::append(const RecordMeta& meta, const uint8_t* const* columns,
                       std::shared_ptr<const void> keepalive) {
  if (meta.steps < 0) {
    throw std::invalid_argument("LogWriter: a record has " + std::to_string(meta.steps) + " steps");
  }
  size_t bytes = kMetaRecordSize;
  for (const ColumnSpec& c : schema_.columns) bytes += c.step_bytes() * static_cast<size_t>(meta.steps);
  return append_locked(meta, columns, bytes, std::move(keepalive));
}

bool LogWriter::append_locked(const RecordMeta& meta, const uint8_t* const* columns, size_t bytes,
                              std::shared_ptr<const void> keepalive) {
  if (bytes > kMaxRecordBytes) {
    throw std::invalid_argument("LogWriter: a record of " + std::to_string(bytes) +
                                " bytes is above the limit of " + std::to_string(kMaxRecordBytes));
  }
  base::MutexLock lock(mu_);
  ++stats_.appended;
  if (!failed_ && !closing_ && !admissible(bytes) &&
      options_.full_queue == FullQueuePolicy::kBackpressure) {
    ++blocked_appenders_;
    work_cv_.notify_all();  // a partial chunk must be cut to make room
    space_cv_.wait(lock, [&]() REQUIRES(mu_) { return failed_ || closing_ || admissible(bytes); });
    --blocked_appenders_;
  }
  if (failed_ || closing_) {
    ++stats_.lost;
    stats_.lost_steps += static_cast<uint64_t>(std::max(0, meta.steps));
    return false;
  }
  if (!admissible(bytes)) {
    ++stats_.dropped;
    return false;
  }
  if (keepalive && bytes >= options_.chunk_target_bytes) {
    // A chunk of its own, compressed where it is: what is open goes first.
    if (!open_.empty()) cut_open();
    open_.refer(meta, columns, std::move(keepalive));  // throws (a caller bug) before anything is counted
    open_since_ = SteadyClock::now();
  } else {
    const bool was_empty = open_.empty();
    open_.add(meta, columns);  // throws (a caller bug) before anything is counted
    if (was_empty) open_since_ = SteadyClock::now();
  }
  ++accepted_;
  accepted_steps_ += static_cast<uint64_t>(meta.steps);
  ++inflight_records_;
  inflight_bytes_ += bytes;
  // Compressors sleep without a deadline while nothing is open: a new chunk
  // wakes one, as does a chunk that is due.
  if (open_.raw_bytes() >= options_.chunk_target_bytes) {
    cut_open();
    work_cv_.notify_one();
  } else if (open_.record_count() == 1 || should_cut()) {
    work_cv_.notify_one();
  }
  return true;
}

bool LogWriter::flush() {
  base::MutexLock lock(mu_);
  if (failed_ || closing_) return false;
  const uint64_t target = accepted_;
  flush_target_ = std::max(flush_target_, target);
  work_cv_.notify_all();
  write_cv_.notify_one();
  durable_cv_.wait(lock, [&]() REQUIRES(mu_) { return failed_ || stats_.durable_records >= target; });
  return !failed_;
}

void LogWriter::close() {
  base::MutexLock close_lock(close_mu_);
  if (closed_) return;
  {
    base::MutexLock lock(mu_);
    closing_ = true;
  }
  work_cv_.notify_all();
  write_cv_.notify_all();
  space_cv_.notify_all();
  for (std::thread& t : compressors_) t.join();
  writer_.join();
  closed_ = true;
  base::MutexLock lock(mu_);
  durable_cv_.notify_all();
}

WriterStats LogWriter::stats() const {
  base::MutexLock lock(mu_);
  WriterStats s = stats_;
  s.cpu_seconds = static_cast<double>(cpu_ns_.load(std::memory_order_relaxed)) * 1e-9;
  return s;
}

void LogWriter::fail(const std::string& message, const Salvage& salvage) {
  if (salvage.synced) note_synced();
  if (salvage.published) ++stats_.segments;
  failed_ = true;
  stats_.error = "experience log: " + message + salvage.note;
  stats_.lost += accepted_ - stats_.durable_records;
  stats_.lost_steps += accepted_steps_ - stats_.durable_steps;
  accepted_ = stats_.durable_records;
  accepted_steps_ = stats_.durable_steps;
  open_.clear();
  full_.clear();
  encoded_.clear();
  inflight_records_ = 0;
  inflight_bytes_ = 0;
  work_cv_.notify_all();
  write_cv_.notify_all();
  space_cv_.notify_all();
  durable_cv_.notify_all();
}

void LogWriter::note_synced() {
  stats_.durable_records += unsynced_records_;
  stats_.durable_steps += unsynced_steps_;
  stats_.durable_bytes += unsynced_bytes_;
  unsynced_records_ = 0;
  unsynced_steps_ = 0;
  unsynced_bytes_ = 0;
  durable_cv_.notify_all();
}

void LogWriter::account_disk(uint64_t bytes) {
  base::MutexLock lock(mu_);
  stats_.bytes_disk += bytes;
}

static int64_t thread_cpu_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

void LogWriter::charge_cpu(int64_t& mark) {
  const int64_t now = thread_cpu_ns();
  cpu_ns_.fetch_add(now - mark, std::memory_order_relaxed);
  mark = now;
}

void LogWriter::compress_loop() {
  int64_t cpu_mark = thread_cpu_ns();
  base::MutexLock lock(mu_);
  while (!failed_) {
    if (full_.empty()) {
      if (open_.empty()) {
        if (closing_) break;
        work_cv_.wait(lock, [&]() REQUIRES(mu_) {
          return failed_ || closing_ || !open_.empty() || !full_.empty();
        });
        continue;
      }
      if (!should_cut()) {
        work_cv_.wait_until(lock, open_since_ + std::chrono::milliseconds(options_.sync_interval_ms));
        continue;
      }
      cut_open();
    }
    const uint64_t seq = full_.front().first;
    ChunkBuilder builder = std::move(full_.front().second);
    full_.pop_front();
    EncodedChunk chunk;
    if (!spare_buffers_.empty()) {
      chunk.bytes = std::move(spare_buffers_.back());
      spare_buffers_.pop_back();
    }
    lock.unlock();
    std::string error;
    try {
      chunk.size = builder.encode_into(chunk.bytes, options_.lz4_acceleration, &chunk.summary);
      chunk.raw_bytes = builder.raw_bytes();
      chunk.steps = builder.step_count();
    } catch (const std::exception& e) {
      error = std::string("cannot encode a chunk: ") + e.what();
    }
    builder.clear();
    charge_cpu(cpu_mark);
    lock.lock();
    if (spare_builders_.size() <= static_cast<size_t>(options_.compress_threads)) {
      spare_builders_.push_back(std::move(builder));
    }
    if (!error.empty() && encode_error_.empty()) {
      encode_error_ = error;  // the writer thread publishes what it has and fails
      write_cv_.notify_one();
    }
    if (failed_ || !error.empty()) break;
    encoded_.emplace(seq, std::move(chunk));
    write_cv_.notify_one();
  }
  --active_compressors_;
  write_cv_.notify_one();
}

void LogWriter::write_loop() {
  int64_t cpu_mark = thread_cpu_ns();
  const auto interval = std::chrono::milliseconds(options_.sync_interval_ms);
  base::MutexLock lock(mu_);
  auto has_next = [&]() REQUIRES(mu_) { return encoded_.count(next_write_seq_) > 0; };
  auto drained = [&]() REQUIRES(mu_) { return closing_ && active_compressors_ == 0 && encoded_.empty(); };
  auto flush_wants_sync = [&]() REQUIRES(mu_) {
    return flush_target_ > stats_.durable_records && stats_.written >= flush_target_;
  };
  std::string error;  // the failure that ends the loop
  while (error.empty()) {
    auto deadline = SteadyClock::time_point::max();
    if (unsynced_bytes_ > 0) deadline = last_sync_ + interval;
    if (options_.segment_max_age_ms > 0 && fd_ >= 0 && !segment_chunks_.empty()) {
      const int64_t left_ns = options_.segment_max_age_ms * 1000000 - (now_ns() - segment_opened_ns_);
      deadline = std::min(deadline, SteadyClock::now() + std::chrono::nanoseconds(left_ns));
    }
    auto wake = [&]() REQUIRES(mu_) {
      return !encode_error_.empty() || has_next() || drained() || flush_wants_sync();
    };
    if (deadline == SteadyClock::time_point::max()) {
      write_cv_.wait(lock, wake);
    } else {
      write_cv_.wait_until(lock, deadline, wake);
    }
    if (!encode_error_.empty()) {
      error = encode_error_;
      break;
    }

    if (has_next()) {
      auto node = encoded_.extract(next_write_seq_);
      ++next_write_seq_;
      const EncodedChunk& chunk = node.mapped();
      lock.unlock();
      if (options_.before_chunk_write) options_.before_chunk_write();
      error = write_chunk(chunk);
      charge_cpu(cpu_mark);
      lock.lock();
      if (!error.empty()) break;
      stats_.written += chunk.summary.record_count;
      stats_.bytes_raw += chunk.raw_bytes;
      inflight_records_ -= chunk.summary.record_count;
      inflight_bytes_ -= chunk.raw_bytes;
      if (spare_buffers_.size() <= static_cast<size_t>(options_.compress_threads)) {
        spare_buffers_.push_back(std::move(node.mapped().bytes));
      }
      space_cv_.notify_all();
    }

    const bool finish = drained();
    const bool roll =
        finish || (fd_ >= 0 && !segment_chunks_.empty() &&
                   ((options_.segment_max_bytes > 0 && segment_offset_ >= options_.segment_max_bytes) ||
                    (options_.segment_max_age_ms > 0 &&
                     now_ns() - segment_opened_ns_ >= options_.segment_max_age_ms * 1000000)));
    const bool sync = unsynced_bytes_ > 0 && (unsynced_bytes_ >= options_.sync_bytes ||
                                              SteadyClock::now() >= last_sync_ + interval ||
                                              flush_wants_sync());
    const bool publish = roll && fd_ >= 0;
    if (publish || sync) {
      lock.unlock();
      error = publish ? publish_segment() : sync_segment();
      charge_cpu(cpu_mark);
      lock.lock();
      if (!error.empty()) break;
      if (publish) ++stats_.segments;
      note_synced();
    }
    if (finish) return;
  }
  // What the open segment holds whole is published before the writer turns off.
  lock.unlock();
  const Salvage salvage = salvage_segment();
  charge_cpu(cpu_mark);
  lock.lock();
  fail(error, salvage);
}

int64_t LogWriter::now_ns() const {
  if (options_.clock_ns) return options_.clock_ns();
  return std::chrono::duration_cast<std::chrono::nanoseconds>(SteadyClock::now().time_since_epoch())
      .count();
}

}  // namespace moonseed::explog
