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

std::optional<size_t> reward_column(const LogSchema& schema) {
  for (size_t c = 0; c < schema.columns.size(); ++c) {
    if (schema.columns[c].name == "reward") return c;
  }
  return std::nullopt;
}

std::vector<EpisodeSummary> summarize_episodes(const LogReader& reader, const RecordFilter& filter,
                                               std::vector<LogProblem>* problems) {
  const LogSchema& schema = reader.schema();
  const std::optional<size_t> reward = reward_column(schema);
  std::vector<bool> columns(schema.columns.size(), false);
  if (reward) columns[*reward] = true;

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
    if (reward) {
      const DType dtype = schema.columns[*reward].dtype;
      const size_t size = dtype_size(dtype);
      const std::vector<uint8_t>& bytes = r->columns[*reward];
      for (size_t off = 0; off + size <= bytes.size(); off += size) {
        e.total_reward += value_as_double(dtype, bytes.data() + off);
      }
    }
  }
  if (problems) problems->insert(problems->end(), cursor.problems().begin(), cursor.problems().end());
  return episodes;
}

}  // namespace moonseed::explog
