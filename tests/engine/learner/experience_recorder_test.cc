#include "engine/learner/experience_recorder.h"

#include <signal.h>
#include <sys/resource.h>

#include <cstring>
#include <fstream>
#include <future>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "tests/explog/explog_test_util.h"
#include "explog/reader.h"
#include "rpc/messages.h"

namespace moonseed::engine {
namespace {

using explog::testing::TempDir;

constexpr int kEnvsPerActor = 2;

envs::EnvSpec vector_spec() {
  envs::EnvSpec spec;
  spec.id = "Test-v0";
  spec.observation.kind = envs::SpaceKind::kBox;
  spec.observation.shape = {2};
  spec.action.kind = envs::SpaceKind::kDiscrete;
  spec.action.n = 20;
  return spec;
}

envs::EnvSpec frame_spec() {
  envs::EnvSpec spec;
  spec.id = "Frames-v0";
  spec.observation.kind = envs::SpaceKind::kBox;
  spec.observation.dtype = envs::DType::kUInt8;
  spec.observation.shape = {84, 84};
  spec.action.kind = envs::SpaceKind::kDiscrete;
  spec.action.n = 4;
  return spec;
}

RecordConfig small_config() {
  RecordConfig c;
  c.enabled = true;
  c.sync_interval_s = 0.01;
  return c;
}

template <typename T>
std::vector<T> column(const explog::Record& r, size_t i) {
  std::vector<T> out(r.columns[i].size() / sizeof(T));
  std::memcpy(out.data(), r.columns[i].data(), r.columns[i].size());
  return out;
}

// Drives one slot of a store with observations {slot, x} the way the inference thread does.
struct Driver {
  UnrollStore& store;
  int slot;
  UnrollPtr step(float x, float reward, uint8_t flags, int64_t action) {
    const float obs[2] = {static_cast<float>(slot), x};
    // As if reward shaping doubled the env's rewards.
    UnrollPtr done = store.observe(slot, reinterpret_cast<const uint8_t*>(obs), reward, flags,
                                   static_cast<uint64_t>(x) + 100, reward / 2);
    store.act(slot, &action, -0.25f * x, static_cast<int64_t>(x) + 1000);
    return done;
  }
};

// Whole unrolls of frame_spec() with random (incompressible) or zero frames.
std::vector<UnrollPtr> frame_unrolls(UnrollPool& pool, int n, bool random) {
  std::mt19937 rng(5);
  std::vector<UnrollPtr> out;
  for (int i = 0; i < n; ++i) {
    UnrollPtr u = pool.acquire();
    u->slot = i % kEnvsPerActor;
    for (uint8_t& b : u->observations) b = random ? static_cast<uint8_t>(rng()) : 0;
    for (size_t t = 0; t < u->valid.size(); ++t) {
      u->valid[t] = 1;
      u->episode_id[t] = i;
      u->episode_step[t] = static_cast<int64_t>(t);
    }
    out.push_back(std::move(u));
  }
  return out;
}

int64_t steps_in_log(const std::string& dir) {
  explog::LogReader reader(dir);
  int64_t steps = 0;
  for (const explog::Record& r : explog::testing::read_all(reader)) steps += r.meta.steps;
  return steps;
}

TEST(ExperienceRecorder, CutsUnrollsIntoPerEpisodeRecordsWithEveryField) {
  TempDir tmp;
  const envs::EnvSpec spec = vector_spec();
  const UnrollShape shape = UnrollShape::from_spec(spec, 4);
  UnrollStore store(4, UnrollPool::create(shape));
  store.set_next_episode_id(7);
  ExperienceRecorder recorder(small_config(), tmp.sub("log"), "run-1", spec, shape, kEnvsPerActor);
  recorder.set_learner_step(5);
  recorder.set_config_version(2);
  Driver env{store, 3};  // actor 1, env 1
  env.step(0, 0.f, envs::kFirst, 10);
  env.step(1, 1.f, 0, 11);
  env.step(2, 2.f, envs::kTerminated, 12);  // final observation of episode 7
  env.step(3, 0.f, envs::kFirst, 13);       // episode 8
  UnrollPtr first = env.step(4, 3.f, 0, 14);
  ASSERT_TRUE(first);
  const int64_t first_wall = first->wall_time_ns;
  EXPECT_TRUE(recorder.offer(std::move(first)));
  env.step(5, 4.f, 0, 15);
  env.step(6, 5.f, envs::kTruncated, 16);  // final observation of episode 8
  env.step(7, 0.f, envs::kFirst, 17);      // episode 9
  UnrollPtr second = env.step(8, 6.f, 0, 18);
  ASSERT_TRUE(second);
  recorder.close();
  EXPECT_FALSE(recorder.offer(std::move(second)));  // closed: not recorded, and counted
  RecorderStats stats = recorder.stats();
  EXPECT_EQ(stats.unrolls, 2);
  EXPECT_EQ(stats.recorded_steps, 4);
  EXPECT_EQ(stats.unrecorded_steps, 4);
  EXPECT_EQ(stats.dropped_steps, 0);  // a full queue's count
  EXPECT_TRUE(stats.error.empty()) << stats.error;
  EXPECT_EQ(stats.writer.written, 2u);

  explog::LogReader reader(tmp.sub("log"));
  EXPECT_EQ(reader.schema().run_id, "run-1");
  EXPECT_EQ(reader.schema().spec,
            "{\"env\":\"Test-v0\",\"observation\":{\"kind\":\"box\",\"dtype\":\"f32\",\"shape\":[2]},"
            "\"action\":{\"kind\":\"discrete\",\"n\":20},\"max_episode_steps\":0}");
  std::vector<std::string> names;
  for (const explog::ColumnSpec& c : reader.schema().columns) names.push_back(c.name);
  EXPECT_EQ(names, (std::vector<std::string>{"observation", "action", "reward", "terminated", "truncated",
                                              "behaviour_logp", "policy_version", "config_version",
                                              "env_reward"}));
  const std::vector<explog::Record> records = explog::testing::read_all(reader);
  ASSERT_EQ(records.size(), 2u);
  const explog::Record& ep7 = records[0];
  EXPECT_EQ(ep7.meta.actor_id, 1);
  EXPECT_EQ(ep7.meta.env_id, 1);
  EXPECT_EQ(ep7.meta.episode_id, 7);
  EXPECT_EQ(ep7.meta.first_step, 0);
  EXPECT_EQ(ep7.meta.steps, 3);
  EXPECT_EQ(ep7.meta.flags, explog::kIsFirst | explog::kIsLast | explog::kTerminated);
  EXPECT_EQ(ep7.meta.wall_time_ns, first_wall);
  EXPECT_EQ(ep7.meta.learner_step, 5);
  EXPECT_EQ(ep7.meta.config_version, 2u);
  EXPECT_EQ(column<float>(ep7, 0), (std::vector<float>{3, 0, 3, 1, 3, 2}));
  EXPECT_EQ(column<int64_t>(ep7, 1), (std::vector<int64_t>{10, 11, 12}));
  EXPECT_EQ(column<float>(ep7, 2), (std::vector<float>{1, 2, 0}));  // the final observation earns nothing
  EXPECT_EQ(column<uint8_t>(ep7, 3), (std::vector<uint8_t>{0, 1, 0}));
  EXPECT_EQ(column<uint8_t>(ep7, 4), (std::vector<uint8_t>{0, 0, 0}));
  EXPECT_EQ(column<float>(ep7, 5), (std::vector<float>{0.f, -0.25f, -0.5f}));
  EXPECT_EQ(column<int64_t>(ep7, 6), (std::vector<int64_t>{1000, 1001, 1002}));
  EXPECT_EQ(column<int64_t>(ep7, 7), (std::vector<int64_t>{100, 101, 102}));
  EXPECT_EQ(column<float>(ep7, 8), (std::vector<float>{0.5f, 1, 0}));  // the env's own, before shaping

  const explog::Record& ep8 = records[1];
  EXPECT_EQ(ep8.meta.episode_id, 8);
  EXPECT_EQ(ep8.meta.first_step, 0);
  EXPECT_EQ(ep8.meta.steps, 1);  // x_4 is step T: it belongs to the next unroll
  EXPECT_EQ(ep8.meta.flags, explog::kIsFirst);
  EXPECT_EQ(column<float>(ep8, 2), (std::vector<float>{3}));
  EXPECT_EQ(column<float>(ep8, 8), (std::vector<float>{1.5f}));
}

TEST(ExperienceRecorder, AResumedLogWrittenBeforeTheEnvRewardColumnKeepsItsColumns) {
  TempDir tmp;
  const envs::EnvSpec spec = vector_spec();
  const UnrollShape shape = UnrollShape::from_spec(spec, 4);
  // The log an older moonseed wrote: the same columns but env_reward.
  explog::LogSchema old_schema = ExperienceRecorder::schema_for(spec, "run-1", "lz4", false);
  ASSERT_EQ(old_schema.columns.back().name, "env_reward");
  old_schema.columns.pop_back();
  {
    explog::WriterOptions options;
    options.directory = tmp.sub("log");
    explog::LogWriter writer(old_schema, options);
    explog::RecordMeta meta;
    meta.steps = 1;
    meta.flags = explog::kIsFirst;
    const uint8_t zeros[16] = {};
    std::vector<const uint8_t*> columns(old_schema.columns.size(), zeros);
    ASSERT_TRUE(writer.append(meta, columns.data()));
    writer.close();
  }
  UnrollStore store(4, UnrollPool::create(shape));
  store.set_next_episode_id(ExperienceRecorder::next_episode_id(tmp.sub("log")));
  ExperienceRecorder recorder(small_config(), tmp.sub("log"), "run-1", spec, shape, kEnvsPerActor);
  Driver env{store, 0};
  env.step(0, 0.f, envs::kFirst, 1);
  for (int x = 1; x < 4; ++x) env.step(static_cast<float>(x), 1.f, 0, 1);
  UnrollPtr done = env.step(4, 1.f, 0, 1);
  ASSERT_TRUE(done);
  EXPECT_TRUE(recorder.offer(std::move(done)));
  recorder.close();
  EXPECT_TRUE(recorder.stats().error.empty()) << recorder.stats().error;

  // Both segments read back: the new one has the old log's columns.
  explog::LogReader reader(tmp.sub("log"));
  EXPECT_TRUE(reader.problems().empty()) << reader.problems().front().message;
  EXPECT_EQ(reader.schema().columns.size(), old_schema.columns.size());
  const std::vector<explog::Record> records = explog::testing::read_all(reader);
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[1].meta.steps, 4);
}

TEST(ExperienceRecorder, AnEpisodeContinuesAcrossUnrollsAndEndsByTruncation) {
  TempDir tmp;
  const envs::EnvSpec spec = vector_spec();
  const UnrollShape shape = UnrollShape::from_spec(spec, 4);
  UnrollStore store(2, UnrollPool::create(shape));
  ExperienceRecorder recorder(small_config(), tmp.path(), "run-2", spec, shape, kEnvsPerActor);
  Driver env{store, 0};
  env.step(0, 0.f, envs::kFirst, 1);
  env.step(1, 1.f, 0, 1);
  env.step(2, 1.f, 0, 1);
  env.step(3, 1.f, 0, 1);
  EXPECT_TRUE(recorder.offer(env.step(4, 1.f, 0, 1)));
  env.step(5, 1.f, envs::kTruncated, 1);
  env.step(6, 0.f, envs::kFirst, 1);
  env.step(7, 1.f, 0, 1);
  EXPECT_TRUE(recorder.offer(env.step(8, 1.f, 0, 1)));
  recorder.close();
  explog::LogReader reader(tmp.path());
  const std::vector<explog::Record> records = explog::testing::read_all(reader);
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(records[0].meta.episode_id, 0);
  EXPECT_EQ(records[0].meta.steps, 4);
  EXPECT_EQ(records[0].meta.flags, explog::kIsFirst);
  EXPECT_EQ(records[1].meta.episode_id, 0);
  EXPECT_EQ(records[1].meta.first_step, 4);
  EXPECT_EQ(records[1].meta.steps, 2);
  EXPECT_EQ(records[1].meta.flags, explog::kIsLast | explog::kTruncated);
  EXPECT_EQ(column<uint8_t>(records[1], 4), (std::vector<uint8_t>{1, 0}));
  EXPECT_EQ(records[2].meta.episode_id, 1);
  EXPECT_EQ(records[2].meta.steps, 2);
  EXPECT_EQ(records[2].meta.flags, explog::kIsFirst);
  // A recorder opened on the same directory continues the episode ids.
  EXPECT_EQ(ExperienceRecorder::next_episode_id(tmp.path()), 2);
  EXPECT_EQ(ExperienceRecorder::next_episode_id(tmp.sub("nothing-here")), 0);
}

TEST(ExperienceRecorder, BackpressureRecordsEveryUnrollWhateverTheQueueSize) {
  TempDir tmp;
  const envs::EnvSpec spec = frame_spec();
  const UnrollShape shape = UnrollShape::from_spec(spec, 8);
  auto pool = UnrollPool::create(shape);
  RecordConfig config = small_config();
  config.queue_mb = 1;  // ~60 KB per unroll: the queue holds a handful
  config.chunk_kb = 64;
  ExperienceRecorder recorder(config, tmp.path(), "run-3", spec, shape, kEnvsPerActor);
  for (UnrollPtr& u : frame_unrolls(*pool, 100, true)) EXPECT_TRUE(recorder.offer(std::move(u)));
  recorder.close();
  const RecorderStats stats = recorder.stats();
  EXPECT_EQ(stats.recorded_steps, 800);
  EXPECT_EQ(stats.dropped_steps, 0);
  EXPECT_EQ(steps_in_log(tmp.path()), 800);
  EXPECT_EQ(pool->available(), pool->allocated());  // every unroll went back to its pool
  // Copying, compressing and writing 800 frames of 7 KB took some CPU, and was counted.
  EXPECT_GT(stats.cpu_seconds, 0.0);
  EXPECT_GT(stats.writer.cpu_seconds, 0.0);
  EXPECT_GT(stats.cpu_seconds, stats.writer.cpu_seconds);
}

// Frames like a game's: a fixed background per unroll and a small square that
// moves one pixel a step, so that consecutive steps differ in a few bytes.
std::vector<UnrollPtr> moving_square_unrolls(UnrollPool& pool, int n) {
  std::vector<UnrollPtr> out;
  const size_t frame = 84 * 84;
  for (int i = 0; i < n; ++i) {
    UnrollPtr u = pool.acquire();
    u->slot = i % kEnvsPerActor;
    const size_t steps = u->valid.size();
    for (size_t t = 0; t < steps; ++t) {
      uint8_t* f = u->observations.data() + t * frame;
      for (size_t p = 0; p < frame; ++p) f[p] = static_cast<uint8_t>((p * 7 + static_cast<size_t>(i)) % 61);
      for (size_t y = 10; y < 16; ++y) {
        for (size_t x = 20 + t; x < 26 + t; ++x) f[y * 84 + x] = 255;
      }
      u->valid[t] = 1;
      u->episode_id[t] = i;
      u->episode_step[t] = static_cast<int64_t>(t);
    }
    out.push_back(std::move(u));
  }
  return out;
}

TEST(ExperienceRecorder, FramesAreStoredXorFilteredAndReadBackAsTheyWereWhetherCopiedOrReferenced) {
  const envs::EnvSpec spec = frame_spec();
  const UnrollShape shape = UnrollShape::from_spec(spec, 8);
  // 8 frames of 7056 bytes: copied into chunks of 64 KiB, referenced as
  // chunks of their own when chunks are 16 KiB.
  for (const int chunk_kb : {64, 16}) {
    SCOPED_TRACE(chunk_kb);
    for (const bool delta : {true, false}) {
      SCOPED_TRACE(delta);
      TempDir tmp;
      auto pool = UnrollPool::create(shape);
      RecordConfig config = small_config();
      config.chunk_kb = chunk_kb;
      config.delta = delta;
      std::vector<std::vector<uint8_t>> written;
      {
        ExperienceRecorder recorder(config, tmp.path(), "run-frames", spec, shape, kEnvsPerActor);
        for (UnrollPtr& u : moving_square_unrolls(*pool, 12)) {
          // Steps 0..T-1 are recorded; step T belongs to the next unroll.
          written.emplace_back(u->observations.begin(),
                               u->observations.begin() + static_cast<ptrdiff_t>(8 * 84 * 84));
          ASSERT_TRUE(recorder.offer(std::move(u)));
        }
        recorder.close();
        EXPECT_EQ(recorder.stats().recorded_steps, 96);
      }
      EXPECT_EQ(pool->available(), pool->allocated()) << "every unroll went back to its pool";
      explog::LogReader reader(tmp.path());
      EXPECT_EQ(reader.schema().columns[0].filter,
                delta ? explog::ColumnFilter::kXorPrevious : explog::ColumnFilter::kNone);
      EXPECT_TRUE(reader.verify().empty());
      const std::vector<explog::Record> records = explog::testing::read_all(reader);
      ASSERT_EQ(records.size(), written.size());
      for (size_t i = 0; i < records.size(); ++i) {
        EXPECT_EQ(records[i].meta.episode_id, static_cast<int64_t>(i));
        EXPECT_TRUE(records[i].columns[0] == written[i]) << "record " << i;
      }
      if (chunk_kb == 16) {
        EXPECT_EQ(reader.chunks().size(), records.size()) << "each record a chunk of its own";
      }
    }
  }
}

TEST(ExperienceRecorder, DropModeCountsWhatAStalledDiskCouldNotTake) {
  TempDir tmp;
  const envs::EnvSpec spec = frame_spec();
  const UnrollShape shape = UnrollShape::from_spec(spec, 8);
  auto pool = UnrollPool::create(shape);
  RecordConfig config = small_config();
  config.queue_mb = 1;
  config.chunk_kb = 64;
  config.full_queue = "drop";
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  ExperienceRecorder recorder(config, tmp.path(), "run-4", spec, shape, kEnvsPerActor,
                              [released] { released.wait(); });
  int accepted = 0;
  for (UnrollPtr& u : frame_unrolls(*pool, 100, true)) accepted += recorder.offer(std::move(u)) ? 1 : 0;
  // The writer is held before its first chunk: at most about 1 MiB waits,
  // ~17 unrolls, and offer() never blocked.
  EXPECT_LT(accepted, 40);
  EXPECT_GT(accepted, 0);
  EXPECT_EQ(recorder.stats().dropped_steps, (100 - accepted) * 8);
  release.set_value();
  recorder.close();
  const RecorderStats stats = recorder.stats();
  EXPECT_EQ(stats.recorded_steps, accepted * 8);
  EXPECT_EQ(stats.dropped_steps, (100 - accepted) * 8);
  EXPECT_EQ(steps_in_log(tmp.path()), accepted * 8);
}

TEST(ExperienceRecorder, AnUnusableDirectoryTurnsRecordingOffWithoutThrowing) {
  TempDir tmp;
  std::ofstream(tmp.sub("a-file")) << "not a directory\n";
  const envs::EnvSpec spec = vector_spec();
  const UnrollShape shape = UnrollShape::from_spec(spec, 4);
  auto pool = UnrollPool::create(shape);
  ExperienceRecorder recorder(small_config(), tmp.sub("a-file/experience"), "run-5", spec, shape, kEnvsPerActor);
  RecorderStats stats = recorder.stats();
  EXPECT_FALSE(stats.recording);
  EXPECT_NE(stats.error.find(tmp.sub("a-file")), std::string::npos) << stats.error;
  EXPECT_FALSE(recorder.offer(pool->acquire()));
  recorder.close();
  EXPECT_EQ(recorder.stats().unrecorded_steps, 4);
  EXPECT_EQ(recorder.stats().dropped_steps, 0);
}

TEST(ExperienceRecorder, RefusesAnUnknownQueuePolicy) {
  TempDir tmp;
  RecordConfig config = small_config();
  config.full_queue = "wait";
  const envs::EnvSpec spec = vector_spec();
  EXPECT_THROW(ExperienceRecorder(config, tmp.path(), "r", spec, UnrollShape::from_spec(spec, 4), 1),
               std::invalid_argument);
}

// A full disk (a file size limit, as a full filesystem gives ENOSPC) turns
// recording off with an error naming the file; offers are then refused, never
// blocked, every chunk written before is readable, and the steps are counted
// as recorded exactly when they are in the log. In a child process:
// RLIMIT_FSIZE would hit the test's own files too.
// Runs in the death test's child: exit code 0 when every expectation holds.
int full_disk_child(const std::string& dir) {
  ::signal(SIGXFSZ, SIG_IGN);
  const rlimit limit{300 * 1024, 300 * 1024};
  ::setrlimit(RLIMIT_FSIZE, &limit);
  const envs::EnvSpec spec = frame_spec();
  const UnrollShape shape = UnrollShape::from_spec(spec, 8);
  auto pool = UnrollPool::create(shape);
  RecordConfig config = small_config();
  config.chunk_kb = 64;
  ExperienceRecorder recorder(config, dir, "run-6", spec, shape, kEnvsPerActor);
  // Backpressure: if a failed writer blocked, this loop would hang (and time out).
  for (UnrollPtr& u : frame_unrolls(*pool, 40, true)) recorder.offer(std::move(u));
  recorder.close();
  const RecorderStats s = recorder.stats();
  const int64_t readable = steps_in_log(dir);
  std::fprintf(stderr, "error=%s recorded=%lld dropped=%lld unrecorded=%lld readable=%lld\n", s.error.c_str(),
               static_cast<long long>(s.recorded_steps), static_cast<long long>(s.dropped_steps),
               static_cast<long long>(s.unrecorded_steps), static_cast<long long>(readable));
  bool ok = s.error.find("File too large") != std::string::npos && s.error.find(dir) != std::string::npos;
  // Not a full queue's drops: steps the failure kept out of the log, wherever
  // they were (the recorder's queue or the writer's), are unrecorded.
  ok = ok && s.dropped_steps == 0 && s.recorded_steps + s.unrecorded_steps == 320 && s.unrecorded_steps > 0;
  ok = ok && !s.recording && readable > 0 && readable == s.recorded_steps;
  return ok ? 0 : 1;
}

TEST(ExperienceRecorderDeathTest, AFullDiskTurnsRecordingOffAndTheLogBeforeItStaysReadable) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  TempDir tmp;
  EXPECT_EXIT(std::exit(full_disk_child(tmp.path())), ::testing::ExitedWithCode(0), "error=.*File too large");
}

}  // namespace
}  // namespace moonseed::engine
