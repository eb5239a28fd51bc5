#include "engine/learner/experience_recorder.h"

#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

#include "base/thread_name.h"
#include "explog/reader.h"
#include "envs/env.h"

namespace moonseed::engine {
namespace {

constexpr size_t kObservation = 0, kAction = 1, kReward = 2, kTerminated = 3, kTruncated = 4, kLogp = 5,
                 kPolicyVersion = 6, kConfigVersion = 7, kEnvReward = 8, kColumns = 9;

std::string json_dims(const std::vector<int64_t>& dims) {
  std::string out = "[";
  for (size_t i = 0; i < dims.size(); ++i) out += (i ? "," : "") + std::to_string(dims[i]);
  return out + "]";
}

std::string json_space(const envs::Space& space) {
  std::ostringstream os;
  if (space.kind == envs::SpaceKind::kDiscrete) {
    os << "{\"kind\":\"discrete\",\"n\":" << space.n << "}";
  } else {
    os << "{\"kind\":\"box\",\"dtype\":\"" << (space.dtype == envs::DType::kUInt8 ? "u8" : "f32")
       << "\",\"shape\":" << json_dims(space.shape) << "}";
  }
  return os.str();
}

explog::FullQueuePolicy policy_of(const std::string& name) {
  if (name == "drop") return explog::FullQueuePolicy::kDrop;
  if (name == "backpressure") return explog::FullQueuePolicy::kBackpressure;
  throw std::invalid_argument("record.full_queue must be \"backpressure\" or \"drop\", got \"" + name + "\"");
}

// Bytes one recorded step takes before compression.
size_t step_bytes(const UnrollShape& shape) {
  return static_cast<size_t>(shape.observation_bytes() + shape.action_bytes()) + 4 + 1 + 1 + 4 + 8 + 8 + 4;
}

// The bytes of values[step]: the recorder's columns point into the unroll.
template <typename T>
const uint8_t* bytes_at(const std::vector<T>& values, int64_t step) {
  return reinterpret_cast<const uint8_t*>(values.data() + step);
}

// The columns of a log that a resumed run continues: a log written before the
// env_reward column existed keeps its columns, since the segments of one
// directory must have the same (docs/experience-log-format.md).
explog::LogSchema continuing(const std::string& directory, explog::LogSchema schema) {
  try {
    explog::LogReader reader(directory);
    for (const explog::ColumnSpec& column : reader.schema().columns) {
      if (column.name == "env_reward") return schema;
    }
    schema.columns.resize(kEnvReward);
  } catch (const std::exception&) {
    // No log there (yet), or nothing readable in it: a new log.
  }
  return schema;
}

}  // namespace

explog::LogSchema ExperienceRecorder::schema_for(const envs::EnvSpec& spec, const std::string& run_id,
                                                 const std::string& codec, bool delta) {
  explog::LogSchema schema;
  schema.run_id = run_id;
  schema.codec = codec;
  schema.spec = "{\"env\":\"" + spec.id + "\",\"observation\":" + json_space(spec.observation) +
                ",\"action\":" + json_space(spec.action) +
                ",\"max_episode_steps\":" + std::to_string(spec.max_episode_steps) + "}";
  const bool discrete = spec.action.kind == envs::SpaceKind::kDiscrete;
  schema.columns.resize(kColumns);
  schema.columns[kObservation] = {"observation",
                                  spec.observation.dtype == envs::DType::kUInt8 ? explog::DType::kU8
                                                                                 : explog::DType::kF32,
                                  spec.observation.shape};
  // Pixels change little from one step to the next: XORed with the step
  // before, most bytes are zeros. Float observations gain nothing from it.
  if (delta && spec.observation.dtype == envs::DType::kUInt8) {
    schema.columns[kObservation].filter = explog::ColumnFilter::kXorPrevious;
  }
  schema.columns[kAction] = {"action", discrete ? explog::DType::kI64 : explog::DType::kF32,
                             discrete ? std::vector<int64_t>{} : std::vector<int64_t>{spec.action.numel()}};
  schema.columns[kReward] = {"reward", explog::DType::kF32, {}};
  schema.columns[kTerminated] = {"terminated", explog::DType::kU8, {}};
  schema.columns[kTruncated] = {"truncated", explog::DType::kU8, {}};
  schema.columns[kLogp] = {"behaviour_logp", explog::DType::kF32, {}};
  schema.columns[kPolicyVersion] = {"policy_version", explog::DType::kI64, {}};
  schema.columns[kConfigVersion] = {"config_version", explog::DType::kI64, {}};
  schema.columns[kEnvReward] = {"env_reward", explog::DType::kF32, {}};
  return schema;
}

int64_t ExperienceRecorder::next_episode_id(const std::string& directory) {
  try {
    explog::LogReader reader(directory);
    int64_t next = 0;
    for (const explog::ChunkRef& chunk : reader.chunks()) {
      if (chunk.summary.record_count > 0) next = std::max(next, chunk.summary.max_episode_id + 1);
    }
    return next;
  } catch (const std::exception&) {
    return 0;  // no log there (yet), or nothing readable in it
  }
}

ExperienceRecorder::ExperienceRecorder(const RecordConfig& config, const std::string& directory,
                                       const std::string& run_id, const envs::EnvSpec& spec,
                                       const UnrollShape& shape, int envs_per_actor,
                                       std::function<void()> before_chunk_write)
    : drop_when_full_(policy_of(config.full_queue) == explog::FullQueuePolicy::kDrop),
      directory_(directory),
      shape_(shape),
      envs_per_actor_(std::max(1, envs_per_actor)),
      schema_(continuing(directory, schema_for(spec, run_id, config.codec, config.delta))),
      queue_(std::max<size_t>(2, static_cast<size_t>(config.queue_mb) * (size_t{1} << 20) / 2 /
                                     (step_bytes(shape) * static_cast<size_t>(shape.unroll_length)))) {
  explog::WriterOptions options;
  options.directory = directory;
  options.chunk_target_bytes = static_cast<size_t>(config.chunk_kb) << 10;
  options.queue_max_records = size_t{1} << 30;  // bounded by bytes
  options.queue_max_bytes = std::max<size_t>(static_cast<size_t>(config.queue_mb) << 20 >> 1, 1);
  // The recorder's queue applies record.full_queue; the writer always holds
  // the recorder's thread back, so nothing is dropped between the two.
  options.full_queue = explog::FullQueuePolicy::kBackpressure;
  options.compress_threads = config.compress_threads;
  options.lz4_acceleration = config.lz4_acceleration;
  options.segment_max_bytes = static_cast<uint64_t>(config.segment_mb) << 20;
  options.segment_max_age_ms = static_cast<int64_t>(config.segment_age_s * 1000);
  options.sync_interval_ms = std::max<int64_t>(1, static_cast<int64_t>(config.sync_interval_s * 1000));
  options.sync_bytes = static_cast<uint64_t>(config.sync_mb) << 20;
  options.before_chunk_write = std::move(before_chunk_write);
  stats_.directory = directory;
  try {
    writer_ = std::make_unique<explog::LogWriter>(schema_, options);
    stats_.recording = true;
  } catch (const std::invalid_argument&) {
    throw;
  } catch (const std::exception& e) {
    stats_.error = e.what();
  }
  thread_ = std::thread([this] {
    base::set_thread_name("ms-record");
    run();
  });
}

ExperienceRecorder::~ExperienceRecorder() { close(); }

bool ExperienceRecorder::offer(UnrollPtr unroll) {
  if (!unroll) return false;
  const int64_t steps = shape_.unroll_length;
  {
    base::MutexLock lock(mu_);
    stats_.unrolls += 1;
    if (!stats_.recording || closed_) {
      stats_.unrecorded_steps += steps;
      return false;
    }
  }
  const bool queued = drop_when_full_ ? queue_.try_push(unroll) : queue_.push(std::move(unroll));
  if (!queued) {
    // Refused by a full queue, or by one that close() closed meanwhile.
    base::MutexLock lock(mu_);
    (closed_ ? stats_.unrecorded_steps : stats_.dropped_steps) += steps;
  }
  return queued;
}

void ExperienceRecorder::run() {
  auto thread_cpu_ns = [] {
    timespec ts{};
    ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
  };
  // Recording needs no latency: the thread drains what is queued, then naps,
  // so that it wakes a few hundred times a second rather than once per unroll
  // (each wakeup costs more CPU than recording a small unroll).
  constexpr auto kNap = std::chrono::milliseconds(2);
  int64_t mark = thread_cpu_ns();
  while (std::optional<UnrollPtr> unroll = queue_.pop()) {
    do {
      // Shared by its records: a record as long as a chunk is compressed
      // straight from the unroll, which goes back to its pool after that.
      record(std::shared_ptr<const Unroll>(std::move(*unroll)));
    } while ((unroll = queue_.try_pop()));
    const int64_t now = thread_cpu_ns();
    cpu_ns_.fetch_add(now - mark, std::memory_order_relaxed);
    mark = now;  // the nap's and the next wait's system calls count in the next round
    std::this_thread::sleep_for(kNap);
  }
}

void ExperienceRecorder::record(std::shared_ptr<const Unroll> unroll) {
  const Unroll& u = *unroll;
  const int64_t T = shape_.unroll_length;
  {
    base::MutexLock lock(mu_);
    if (!stats_.recording) {
      stats_.unrecorded_steps += T;
      return;
    }
  }
  const int64_t obs_bytes = shape_.observation_bytes();
  const int64_t action_bytes = shape_.action_bytes();
  const int64_t learner_step = learner_step_.load(std::memory_order_relaxed);
  const uint64_t config_version = config_version_.load(std::memory_order_relaxed);
  std::string error;
  for (int64_t start = 0; start < T;) {
    int64_t end = start + 1;
    while (end < T && u.episode_id[static_cast<size_t>(end)] == u.episode_id[static_cast<size_t>(start)]) ++end;
    const size_t first = static_cast<size_t>(start), last = static_cast<size_t>(end - 1);
    explog::RecordMeta meta;
    meta.actor_id = u.slot / envs_per_actor_;
    meta.env_id = u.slot % envs_per_actor_;
    meta.episode_id = u.episode_id[first];
    meta.first_step = u.episode_step[first];
    meta.steps = static_cast<int32_t>(end - start);
    if (u.obs_flags[first] & envs::kFirst) meta.flags |= explog::kIsFirst;
    if (!u.valid[last]) {
      meta.flags |= explog::kIsLast;
      if (u.obs_flags[last] & envs::kTerminated) meta.flags |= explog::kTerminated;
      if (u.obs_flags[last] & envs::kTruncated) meta.flags |= explog::kTruncated;
    }
    meta.wall_time_ns = u.wall_time_ns;
    meta.learner_step = learner_step;
    meta.config_version = config_version;
    const uint8_t* columns[kColumns];
    columns[kObservation] = u.observations.data() + start * obs_bytes;
    columns[kAction] = u.actions.data() + start * action_bytes;
    columns[kReward] = bytes_at(u.rewards, start);
    columns[kTerminated] = bytes_at(u.terminated, start);
    columns[kTruncated] = bytes_at(u.truncated, start);
    columns[kLogp] = bytes_at(u.behaviour_logp, start);
    columns[kPolicyVersion] = bytes_at(u.policy_version, start);
    columns[kConfigVersion] = bytes_at(u.config_version, start);
    columns[kEnvReward] = bytes_at(u.env_rewards, start);
    // A refused record is the writer's to count (lost_steps): it is off.
    handed_steps_.fetch_add(end - start, std::memory_order_relaxed);
    if (!writer_->append(meta, columns, unroll)) error = writer_->stats().error;
    start = end;
  }
  if (error.empty()) return;
  base::MutexLock lock(mu_);
  if (stats_.recording) {
    stats_.recording = false;
    stats_.error = error;
  }
}

void ExperienceRecorder::close() {
  base::MutexLock serial(close_mu_);
  {
    base::MutexLock lock(mu_);
    if (closed_) return;
    closed_ = true;
  }
  queue_.close();  // run() drains what is queued, then returns
  if (thread_.joinable()) thread_.join();
  if (writer_) writer_->close();
  base::MutexLock lock(mu_);
  if (writer_ && stats_.recording && !writer_->stats().error.empty()) stats_.error = writer_->stats().error;
  stats_.recording = false;
}

RecorderStats ExperienceRecorder::stats() const {
  RecorderStats s;
  {
    base::MutexLock lock(mu_);
    s = stats_;
  }
  s.queued_unrolls = static_cast<int64_t>(queue_.size());
  s.cpu_seconds = static_cast<double>(cpu_ns_.load(std::memory_order_relaxed)) * 1e-9;
  if (writer_) {
    s.writer = writer_->stats();
    // Read after the writer's stats: every step it counts as lost was handed to it before.
    const int64_t handed = handed_steps_.load(std::memory_order_relaxed);
    const auto lost = static_cast<int64_t>(s.writer.lost_steps);
    s.recorded_steps = handed - lost;
    s.unrecorded_steps += lost;
    s.cpu_seconds += s.writer.cpu_seconds;
    // The writer may have failed since the last record (a sync, a segment roll).
    if (s.error.empty() && !s.writer.error.empty()) {
      s.error = s.writer.error;
      s.recording = false;
    }
  }
  return s;
}

}  // namespace moonseed::engine
