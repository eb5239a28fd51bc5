// LogUnrolls: the unrolls of a recorded run, rebuilt from its experience log
// (engine/learner/experience_recorder.h says what a learner records) for a warm start
// (docs/experience-log.md "Warm start"). Each (actor, env) stream of the log
// is fed, step by step in log order, through the same UnrollStore the learner
// uses, so the unrolls come out as the learner built them: T+1 steps
// overlapping by one, final observations invalid, each reward on the step
// whose action earned it, the logged behaviour log-probs and policy versions.
// A stream that jumps (a record that does not continue its env's previous
// one: a learner restarted, a record dropped) starts afresh, as the learner
// does when an actor reconnects.
//
// Errors: a log that cannot be opened, or whose observation / action columns
// do not fit `spec` (another env), is std::invalid_argument naming the log, the
// column and both shapes. Corrupt chunks are skipped (problems()).
// Thread-safety: one thread at a time.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "explog/reader.h"
#include "engine/learner/unroll_store.h"
#include "envs/spec.h"

namespace moonseed::engine {

class LogUnrolls {
 public:
  // `path`: a run directory (its log is RUN_DIR/experience), a log directory
  // or one segment file.
  LogUnrolls(const std::string& path, const envs::EnvSpec& spec, int64_t unroll_length);

  // The next unroll, or an empty pointer at the end of the log.
  UnrollPtr next();
  // Back to the start of the log (a new pass; the streams start afresh).
  void rewind();

  const std::string& directory() const { return directory_; }
  uint64_t records() const { return reader_->record_count(); }
  int64_t steps_read() const { return steps_read_; }         // in this pass
  int64_t streams() const { return static_cast<int64_t>(streams_.size()); }
  std::vector<std::string> problems() const;

 private:
  struct Stream {
    int64_t episode_id = -1;
    int64_t next_step = 0;   // where the stream's next record must start
    bool ended = true;       // the last record ended its episode
    float prev_reward = 0;   // of the last step fed
    int slot = 0;
  };
  void feed(const explog::Record& record);
  Stream& stream_for(const explog::RecordMeta& meta);

  std::string directory_;
  std::unique_ptr<explog::LogReader> reader_;
  std::optional<explog::RecordCursor> cursor_;
  std::shared_ptr<UnrollPool> pool_;
  UnrollShape shape_;
  size_t observation_column_ = 0, action_column_ = 0, reward_column_ = 0, logp_column_ = 0,
         version_column_ = 0, config_column_ = 0;
  std::map<std::pair<int32_t, int32_t>, Stream> streams_;
  std::vector<std::unique_ptr<UnrollStore>> stores_;  // one single-slot store per stream
  std::deque<UnrollPtr> ready_;
  int64_t steps_read_ = 0;
};

}  // namespace moonseed::engine
