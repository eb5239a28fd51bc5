// Episodes of an experience log: the records (unrolls) with the same actor,
// env and episode id, grouped with their step count, return and how they
// end. One definition for `moonseed log ls` (cli/launcher/log_ls.cc) and ms.log's
// episodes() (scripts/api/lua_log_api.cc).
//
// An episode's records need not be contiguous (actors interleave) nor all be
// in the log (a filter, a torn tail, a log that starts mid-run): has_first
// says a record with is_first is there, last_flags are the flags of the
// latest record with is_last, 0 while none is there ("open").
//
// Failure: a chunk that cannot be decoded is skipped and reported, not thrown.
// Thread-safety: summarize_episodes only calls const members of the reader,
// so several threads may summarize one reader at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "explog/format.h"
#include "explog/reader.h"

namespace moonseed::explog {

struct EpisodeSummary {
  int32_t actor_id = 0;
  int32_t env_id = 0;
  int64_t episode_id = 0;
  int64_t first_step = 0;   // the least first_step of its records in the log
  int64_t steps = 0;        // over its records in the log
  double total_reward = 0;  // sum of the "reward" column over those steps; 0 without one
  // The env's own return: the sum of the "env_reward" column (the rewards
  // before reward shaping), or total_reward in a log without that column.
  double env_return = 0;
  bool has_first = false;   // a record with is_first is in the log
  uint8_t last_flags = 0;   // of the latest record with is_last, else 0
  int64_t first_wall_time_ns = 0;  // the least wall time of its records
  int64_t last_wall_time_ns = 0;   // the greatest
};

// "open" (no record with is_last), "terminated", "truncated", else "ended".
const char* episode_end(const EpisodeSummary& episode);

// The index of the schema's column named "reward", if it has one.
std::optional<size_t> reward_column(const LogSchema& schema);
// ... and of the one named "env_reward" (logs written since the engine sends
// the env's reward beside the shaped one).
std::optional<size_t> env_reward_column(const LogSchema& schema);

// Reads the records of `reader` that pass `filter`, in log order, decoding
// only their meta and the reward and env_reward columns, and groups them into episodes in
// the order each first appears. A reward of any dtype is summed as doubles
// (value_as_double), step by step in log order. Chunks that cannot be decoded
// are skipped and, when `problems` is not null, appended to *problems.
std::vector<EpisodeSummary> summarize_episodes(const LogReader& reader, const RecordFilter& filter = {},
                                               std::vector<LogProblem>* problems = nullptr);

}  // namespace moonseed::explog
