#include "explog/episodes.h"

#include <algorithm>
#include <map>
#include <tuple>

namespace moonseed::explog {

const char* episode_end(const EpisodeSummary& e) {
  if (!(e.last_flags & kIsLast)) return "open";
  if (e.last_flags & kTerminated) return "terminated";
  if (e.last_flags & kTruncated) return "truncated";
  return "ended";
}

namespace {

std::optional<size_t> column_named(const LogSchema& schema, const char* name) {
  for (size_t c = 0; c < schema.columns.size(); ++c) {
    if (schema.columns[c].name == name) return c;
  }
  return std::nullopt;
}

// The sum of a record's values of column `c`, as doubles, step by step.
double column_sum(const LogSchema& schema, const Record& r, size_t c) {
  const DType dtype = schema.columns[c].dtype;
  const size_t size = dtype_size(dtype);
  const std::vector<uint8_t>& bytes = r.columns[c];
  double sum = 0;
  for (size_t off = 0; off + size <= bytes.size(); off += size) sum += value_as_double(dtype, bytes.data() + off);
  return sum;
}

}  // namespace

std::optional<size_t> reward_column(const LogSchema& schema) { return column_named(schema, "reward"); }

std::optional<size_t> env_reward_column(const LogSchema& schema) { return column_named(schema, "env_reward"); }

std::vector<EpisodeSummary> summarize_episodes(const LogReader& reader, const RecordFilter& filter,
                                               std::vector<LogProblem>* problems) {
  const LogSchema& schema = reader.schema();
  const std::optional<size_t> reward = reward_column(schema);
  std::vector<bool> columns(schema.columns.size(), false);
  const std::optional<size_t> env_reward = env_reward_column(schema);
  if (reward) columns[*reward] = true;
  if (env_reward) columns[*env_reward] = true;

  std::vector<EpisodeSummary> episodes;
  std::map<std::tuple<int32_t, int32_t, int64_t>, size_t> index;  // -> into episodes
  RecordCursor cursor = reader.scan(filter, std::move(columns));
  while (std::optional<Record> r = cursor.next()) {
    const RecordMeta& m = r->meta;
    const auto [it, inserted] =
        index.emplace(std::make_tuple(m.actor_id, m.env_id, m.episode_id), episodes.size());
    if (inserted) {
      EpisodeSummary e;
      e.actor_id = m.actor_id;
      e.env_id = m.env_id;
      e.episode_id = m.episode_id;
      e.first_step = m.first_step;
      e.first_wall_time_ns = e.last_wall_time_ns = m.wall_time_ns;
      episodes.push_back(e);
    }
    EpisodeSummary& e = episodes[it->second];
    e.steps += m.steps;
    e.first_step = std::min(e.first_step, m.first_step);
    e.has_first = e.has_first || (m.flags & kIsFirst);
    if (m.flags & kIsLast) e.last_flags = m.flags;
    e.first_wall_time_ns = std::min(e.first_wall_time_ns, m.wall_time_ns);
    e.last_wall_time_ns = std::max(e.last_wall_time_ns, m.wall_time_ns);
    const double rewards = reward ? column_sum(schema, *r, *reward) : 0.0;
    e.total_reward += rewards;
    e.env_return += env_reward ? column_sum(schema, *r, *env_reward) : rewards;
  }
  if (problems) problems->insert(problems->end(), cursor.problems().begin(), cursor.problems().end());
  return episodes;
}

}  // namespace moonseed::explog
