// End-to-end experience recording (record.enabled): the real `moonseed`
// binary, real actor processes, the log read back with the engine's reader.
#include <signal.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "explog/reader.h"
#include "tests/e2e/process.h"

namespace moonseed::testing {
namespace {

namespace explog = explog;

const std::string kBinary = MOONSEED_BINARY;
const std::string kSource = MOONSEED_SOURCE_DIR;

std::vector<explog::Record> read_all(const explog::LogReader& reader) {
  std::vector<explog::Record> out;
  explog::RecordCursor cursor = reader.scan();
  while (std::optional<explog::Record> r = cursor.next()) out.push_back(std::move(*r));
  EXPECT_TRUE(cursor.problems().empty()) << cursor.problems().front().message;
  return out;
}

size_t column_index(const explog::LogSchema& schema, const std::string& name) {
  for (size_t i = 0; i < schema.columns.size(); ++i) {
    if (schema.columns[i].name == name) return i;
  }
  ADD_FAILURE() << "no column " << name;
  return 0;
}

template <typename T>
std::vector<T> values(const explog::Record& r, size_t column) {
  std::vector<T> out(r.columns[column].size() / sizeof(T));
  std::memcpy(out.data(), r.columns[column].data(), r.columns[column].size());
  return out;
}

struct Episode {
  int64_t steps = 0;
  double reward = 0;
  bool first = false, last = false, terminated = false, truncated = false;
  int64_t next_step = 0;  // where the next record must start
  int32_t actor = -1, env = -1;
};

// Groups records by episode, checking on the way that each episode's records
// follow each other without a gap, from one actor and env.
std::map<int64_t, Episode> episodes_of(const explog::LogReader& reader, const std::vector<explog::Record>& records) {
  const size_t reward = column_index(reader.schema(), "reward");
  std::map<int64_t, Episode> episodes;
  for (const explog::Record& r : records) {
    Episode& e = episodes[r.meta.episode_id];
    if (e.actor < 0) {
      e.actor = r.meta.actor_id;
      e.env = r.meta.env_id;
      e.first = (r.meta.flags & explog::kIsFirst) != 0;
      e.next_step = r.meta.first_step;
    }
    EXPECT_EQ(r.meta.first_step, e.next_step) << "episode " << r.meta.episode_id;
    EXPECT_EQ(r.meta.actor_id, e.actor);
    EXPECT_EQ(r.meta.env_id, e.env);
    EXPECT_FALSE(e.last) << "a record after the end of episode " << r.meta.episode_id;
    e.next_step += r.meta.steps;
    e.steps += r.meta.steps;
    for (float v : values<float>(r, reward)) e.reward += v;
    if (r.meta.flags & explog::kIsLast) {
      e.last = true;
      e.terminated = (r.meta.flags & explog::kTerminated) != 0;
      e.truncated = (r.meta.flags & explog::kTruncated) != 0;
    }
  }
  return episodes;
}

struct RecordedCartpole : TrainingRun {
  RecordedCartpole()
      : TrainingRun(kSource + "/examples/cartpole_vtrace.lua",
                    {"log.interval_s=0.25", "stop.return_mean=0", "record.enabled=true"}, "moonseed-record") {}
};

// A short V-trace run that trains (acting waits for training: of 20000
// frames all but about 3000 are trained on) and ends hundreds of episodes.
const std::string kShortVtraceRun = "stop.frames=20000";

TEST(RecordEndToEnd, AVtraceRunRecordsWholeEpisodesOfEveryActorAndEnv) {
  RecordedCartpole run;
  ChildProcess learner(run.args({kShortVtraceRun}), run.log);
  ASSERT_EQ(learner.wait(120), std::optional<int>(0)) << read_file(run.log);
  const std::string out = read_file(run.log);
  EXPECT_NE(out.find("recording experience to " + run.run_dir() + "/experience"), std::string::npos) << out;
  EXPECT_NE(out.find("x compression"), std::string::npos) << out;
  const auto rows = run.metrics();
  EXPECT_GT(last(rows, "record_steps"), 1000) << out;
  EXPECT_EQ(last(rows, "record_dropped_steps"), 0);
  EXPECT_GT(last(rows, "record_ratio"), 1);
  EXPECT_GT(last(rows, "record_cpu_s"), 0);

  // A clean stop published every segment.
  for (const auto& e : std::filesystem::directory_iterator(run.run_dir() + "/experience")) {
    EXPECT_EQ(e.path().extension(), ".mslog") << e.path();
  }
  explog::LogReader reader(run.run_dir() + "/experience");
  EXPECT_TRUE(reader.verify().empty());
  EXPECT_EQ(reader.schema().spec.find("\"env\":\"CartPole-v1\""), 1u) << reader.schema().spec;
  const std::vector<explog::Record> records = read_all(reader);
  int64_t steps = 0, last_learner_step = 0;
  const size_t logp = column_index(reader.schema(), "behaviour_logp");
  for (const explog::Record& r : records) {
    steps += r.meta.steps;
    EXPECT_GE(r.meta.learner_step, last_learner_step);  // stamped in order by one thread
    last_learner_step = r.meta.learner_step;
    for (float v : values<float>(r, logp)) EXPECT_LE(v, 0.f);
  }
  // Every unroll trained on was recorded (and the ones left at the stop).
  EXPECT_GE(steps, last(rows, "trained_frames"));
  EXPECT_GT(last_learner_step, 0);

  // CartPole pays 1 per step: a whole episode's return is its step count
  // minus the final observation, at most 500 (truncation) steps.
  const std::map<int64_t, Episode> episodes = episodes_of(reader, records);
  int whole = 0;
  std::map<int32_t, int> actors;
  for (const auto& [id, e] : episodes) {
    actors[e.actor] += 1;
    EXPECT_GE(e.env, 0);
    EXPECT_LT(e.env, 32);
    if (!(e.first && e.last)) continue;
    ++whole;
    EXPECT_EQ(e.reward, static_cast<double>(e.steps - 1)) << "episode " << id;
    // Both at once is legal (Gymnasium): the pole falls on the 500th step.
    EXPECT_TRUE(e.terminated || e.truncated) << "episode " << id;
    if (e.truncated) {
      EXPECT_EQ(e.steps - 1, 500) << "episode " << id;
    }
  }
  EXPECT_GT(whole, 50);
  EXPECT_EQ(actors.size(), 2u);  // both actors' envs
  // The final "stop" row counts every episode the learner saw end, after
  // everything stopped: the log cannot hold more.
  EXPECT_LE(whole, last(run.metrics(), "episodes"));

  // The command-line reader agrees.
  ChildProcess verify({kBinary, "log", "verify", run.run_dir()}, run.runs_dir + "/verify.log");
  EXPECT_EQ(verify.wait(60), std::optional<int>(0)) << read_file(run.runs_dir + "/verify.log");
}

TEST(RecordEndToEnd, AKilledLearnerLeavesAReadableLogAndAResumeContinuesIt) {
  RecordedCartpole run;
  ChildProcess learner(run.args({kUntilStopped, "record.sync_interval_s=0.2", "checkpoint.interval_s=1"}),
                       run.log);
  ASSERT_TRUE(eventually(60, [&] {
    return !run.run_dir().empty() && last(run.metrics(), "record_durable_records") > 200 &&
           std::filesystem::exists(run.run_dir() + "/checkpoints");
  })) << read_file(run.log);
  // A finished checkpoint to resume from, sealed by its manifest (the one
  // being written at the kill is a .partial, or unsealed, which a resume
  // rightly skips).
  ASSERT_TRUE(eventually(30, [&] {
    for (const auto& e : std::filesystem::directory_iterator(run.run_dir() + "/checkpoints")) {
      if (e.path().extension() == ".sum") return true;
    }
    return false;
  }));
  const double durable = last(run.metrics(), "record_durable_records");
  learner.signal(SIGKILL);
  learner.wait(30);

  // Every record reported durable before the kill is there; the segment the
  // learner was writing stays .partial and reads up to its last whole chunk.
  std::vector<std::string> partial;
  for (const auto& e : std::filesystem::directory_iterator(run.run_dir() + "/experience")) {
    if (e.path().extension() == ".partial") partial.push_back(e.path().string());
  }
  EXPECT_EQ(partial.size(), 1u);
  int64_t max_episode = -1;
  size_t before = 0;
  {
    explog::LogReader reader(run.run_dir() + "/experience");
    for (const explog::LogProblem& p : reader.verify()) EXPECT_TRUE(p.torn) << p.message;
    const std::vector<explog::Record> records = read_all(reader);
    before = records.size();
    EXPECT_GE(static_cast<double>(before), durable);
    for (const explog::Record& r : records) max_episode = std::max(max_episode, r.meta.episode_id);
    episodes_of(reader, records);  // no gaps within an episode
  }

  const size_t rows_before = run.metrics().size();
  ChildProcess resumed({kBinary, "run", "--resume", run.run_dir(), kUntilStopped, "log.interval_s=0.25"},
                       run.log);
  EXPECT_TRUE(eventually(60, [&] {
    const auto rows = run.metrics();
    return rows.size() > rows_before && last(rows, "record_steps") > 1000;
  })) << read_file(run.log);
  resumed.signal(SIGTERM);
  ASSERT_EQ(resumed.wait(120), std::optional<int>(0)) << read_file(run.log);
  explog::LogReader reader(run.run_dir() + "/experience");
  const std::vector<explog::Record> records = read_all(reader);
  ASSERT_GT(records.size(), before);
  // The resumed learner wrote new segments after the old ones, with new episode ids.
  for (size_t i = before; i < records.size(); ++i) EXPECT_GT(records[i].meta.episode_id, max_episode);
}

TEST(RecordEndToEnd, AnUnusableLogDirectoryTurnsRecordingOffAndTrainingGoesOn) {
  RecordedCartpole run;
  // config.lua is a file, so nothing can be created under it.
  ChildProcess learner(run.args({kShortVtraceRun, "record.dir=\"config.lua/experience\""}), run.log);
  ASSERT_EQ(learner.wait(120), std::optional<int>(0)) << read_file(run.log);
  const std::string out = read_file(run.log);
  EXPECT_NE(out.find("experience recording is off"), std::string::npos) << out;
  EXPECT_NE(out.find("config.lua/experience"), std::string::npos) << out;
  EXPECT_GT(last(run.metrics(), "optimizer_steps"), 0) << out;
  EXPECT_NE(read_file(run.run_dir() + "/metrics.jsonl").find("\"event\": \"record_off\""), std::string::npos);
}

TEST(RecordEndToEnd, AnR2d2RunRecordsItsTrainingEnvsWithEpsilonGreedyLogProbs) {
  TrainingRun run(kSource + "/examples/cartpole_r2d2.lua",
                  {"log.interval_s=0.25", "stop.eval_return_mean=0", "r2d2.min_fill=64", "r2d2.capacity=1000",
                   "record.enabled=true", "r2d2.epsilon_base=0.4", "r2d2.epsilon_alpha=7"},
                  "moonseed-record-r2d2");
  ChildProcess learner(run.args({"stop.frames=5000"}), run.log);
  ASSERT_EQ(learner.wait(120), std::optional<int>(0)) << read_file(run.log);
  explog::LogReader reader(run.run_dir() + "/experience");
  const std::vector<explog::Record> records = read_all(reader);
  ASSERT_FALSE(records.empty()) << read_file(run.log);
  const size_t logp = column_index(reader.schema(), "behaviour_logp");
  int greedy = 0, random = 0;
  for (const explog::Record& r : records) {
    // classic_r2d2: 16 envs per actor, the last 2 evaluate and are not recorded.
    ASSERT_LT(r.meta.env_id, 14);
    // Training env i of 28 explores with epsilon = 0.4^(1 + 7 i / 27) (Ape-X), so
    // each logged log-prob is log(epsilon / 2 + 1 - epsilon) for the greedy
    // action or log(epsilon / 2) for the other.
    const double i = r.meta.actor_id * 14 + r.meta.env_id;
    const double epsilon = std::pow(0.4, 1 + 7 * i / 27);
    for (float v : values<float>(r, logp)) {
      if (std::abs(v - std::log(epsilon / 2 + 1 - epsilon)) < 1e-5) {
        ++greedy;
      } else {
        EXPECT_NEAR(v, std::log(epsilon / 2), 1e-5) << "actor " << r.meta.actor_id << " env " << r.meta.env_id;
        ++random;
      }
    }
  }
  EXPECT_GT(greedy, random);
  EXPECT_GT(random, 0);
  episodes_of(reader, records);
}

// The metrics row of the warm start event ({} when there is none).
MetricsRow warm_start_event(const std::string& run_dir) {
  const std::vector<MetricsRow> rows = read_metrics(run_dir + "/metrics.jsonl");
  for (const MetricsRow& r : rows) {
    if (r.count("warm_start_steps")) return r;
  }
  return {};
}

// A run of `example` (an actor-critic: V-trace or APPO) warm-started from the recorded log of a
// V-trace teacher that learned CartPole: 300 steps of its loss plus behaviour cloning.
void student_starts_where_the_teacher_was(const std::string& example) {
  RecordedCartpole teacher;
  // However long it takes the teacher to learn: the bound only fails a run that does not.
  ChildProcess t(teacher.args({"stop.return_mean=400"}), teacher.log);
  ASSERT_EQ(t.wait(240), std::optional<int>(0)) << read_file(teacher.log);
  ASSERT_GE(last(teacher.metrics(), "return_mean"), 400) << read_file(teacher.log);

  TrainingRun student(kSource + "/examples/" + example, {"log.interval_s=0.25", "stop.return_mean=0"},
                      "moonseed-warm");
  // 64000 frames are 1000 steps of each of the 64 envs: every env ends an
  // episode (CartPole cuts them at 500 steps), so a row counts 64 episodes.
  ChildProcess s(student.args({"stop.frames=64000", "warm_start.log=\"" + teacher.run_dir() + "\"",
                               "warm_start.steps=300"}),
                 student.log);
  ASSERT_EQ(s.wait(120), std::optional<int>(0)) << read_file(student.log);
  const std::string out = read_file(student.log);
  EXPECT_NE(out.find("moonseed: warm start: 300 steps on 4800 unrolls"), std::string::npos) << out;
  const MetricsRow event = warm_start_event(student.run_dir());
  ASSERT_FALSE(event.empty()) << read_file(student.run_dir() + "/metrics.jsonl");
  EXPECT_EQ(event.at("warm_start_steps"), 300);
  // Behaviour cloning learned the teacher's actions.
  EXPECT_LT(event.at("warm_start_bc_last"), 0.9 * event.at("warm_start_bc_first"));
  // From its first episodes on, the student plays far above a random policy
  // (about 22 on CartPole): the teacher's log taught it.
  double early = -1;
  for (const MetricsRow& r : student.metrics()) {
    if (r.count("episodes") && r.at("episodes") >= 64) {
      early = r.at("return_mean");
      break;
    }
  }
  EXPECT_GE(early, 100) << out;
}

TEST(WarmStartEndToEnd, AVtraceRunClonedFromARecordedTeacherStartsWhereTheTeacherWas) {
  student_starts_where_the_teacher_was("cartpole_vtrace.lua");
}

TEST(WarmStartEndToEnd, AnAppoRunClonedFromARecordedTeacherStartsWhereTheTeacherWas) {
  student_starts_where_the_teacher_was("cartpole_appo.lua");
}

TEST(WarmStartEndToEnd, AnR2d2RunPrefillsItsReplayFromARecordedLog) {
  const std::vector<std::string> fixed = {"log.interval_s=0.25", "stop.eval_return_mean=0", "r2d2.min_fill=64",
                                          "r2d2.capacity=1000"};
  TrainingRun teacher(kSource + "/examples/cartpole_r2d2.lua", fixed, "moonseed-warm-r2d2");
  // 32 envs, 28 of them recorded: hundreds of logged unrolls of 16 steps.
  ChildProcess t(teacher.args({"stop.frames=10000", "record.enabled=true"}), teacher.log);
  ASSERT_EQ(t.wait(120), std::optional<int>(0)) << read_file(teacher.log);

  TrainingRun student(kSource + "/examples/cartpole_r2d2.lua", fixed, "moonseed-warm-r2d2");
  // Acting waits for learning (r2d2.samples_per_insert = 1), so 10000 frames train.
  ChildProcess s(student.args({"stop.frames=10000", "warm_start.log=\"" + teacher.run_dir() + "/experience\""}),
                 student.log);
  ASSERT_EQ(s.wait(120), std::optional<int>(0)) << read_file(student.log);
  const MetricsRow event = warm_start_event(student.run_dir());
  ASSERT_FALSE(event.empty()) << read_file(student.log);
  // Every logged unroll of 16 steps moves a slot one sequence period on.
  const double sequences = event.at("warm_start_sequences");
  EXPECT_GE(sequences, 64) << read_file(student.log);
  EXPECT_LE(sequences, 1000);  // r2d2.capacity
  EXPECT_LE(sequences, event.at("warm_start_unrolls"));
  const std::string out = read_file(student.log);
  EXPECT_NE(out.find(std::to_string(static_cast<int>(sequences)) + " sequences in the replay"), std::string::npos)
      << out;
  // The log's episodes are not the student's.
  const auto first_rows = student.metrics();
  for (const MetricsRow& r : first_rows) {
    if (r.count("frames") && r.at("frames") == 0) {
      EXPECT_EQ(r.at("episodes"), 0);
    }
  }
  // Learning starts on the pre-filled replay at once.
  const auto rows = student.metrics();
  EXPECT_GT(last(rows, "optimizer_steps"), 0) << out;
}

TEST(WarmStartEndToEnd, ALogOfAnotherEnvIsRefusedNamingTheColumn) {
  RecordedCartpole teacher;
  ChildProcess t(teacher.args({kShortVtraceRun}), teacher.log);
  ASSERT_EQ(t.wait(120), std::optional<int>(0)) << read_file(teacher.log);
  TrainingRun student(kSource + "/examples/cartpole_vtrace.lua", {"stop.return_mean=0"}, "moonseed-warm");
  ChildProcess s(student.args({kUntilStopped, "env.id=\"Acrobot-v1\"",
                               "warm_start.log=\"" + teacher.run_dir() + "\""}),
                 student.log);
  const std::optional<int> code = s.wait(60);
  ASSERT_TRUE(code.has_value());
  EXPECT_NE(*code, 0);
  const std::string out = read_file(student.log);
  EXPECT_NE(out.find("'observation'"), std::string::npos) << out;
  EXPECT_NE(out.find("Acrobot-v1"), std::string::npos) << out;
}

}  // namespace
}  // namespace moonseed::testing
