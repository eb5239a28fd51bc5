// `moonseed log info`: a log's schema, segments, counts, sizes and problems, as text or JSON.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "base/text.h"
#include "cli/launcher/log_args.h"
#include "cli/common/log_text.h"
#include "explog/reader.h"

namespace moonseed::cli::log_cmd {
namespace {

namespace ex = explog;

// What `info` reports beyond the schema and the segment list; counted over
// every record that could be read.
struct LogSummary {
  std::string path;
  uint64_t records = 0;
  uint64_t steps = 0;
  uint64_t bytes_raw = 0;   // record meta + columns, uncompressed
  uint64_t bytes_disk = 0;  // segment file sizes
  size_t episodes = 0;      // distinct (actor, env, episode id)
  std::set<int32_t> actors;
  std::optional<int64_t> first_time, last_time;
  std::vector<ex::LogProblem> problems;  // at open, then chunks that could not be read

  double ratio() const {
    return bytes_disk > 0 ? static_cast<double>(bytes_raw) / static_cast<double>(bytes_disk) : 0;
  }
};

uint64_t segment_records(const ex::LogReader& reader, const ex::SegmentInfo& s) {
  uint64_t n = 0;
  for (size_t c = s.first_chunk; c < s.first_chunk + s.chunk_count; ++c) {
    n += reader.chunks()[c].summary.record_count;
  }
  return n;
}

bool published(const ex::SegmentInfo& s) {
  return s.path.size() >= 6 && s.path.compare(s.path.size() - 6, 6, ".mslog") == 0;
}

std::string base_name(const std::string& path) { return std::filesystem::path(path).filename().string(); }

std::string info_json(const ex::LogReader& reader, const LogSummary& sum) {
  const ex::LogSchema& schema = reader.schema();
  std::string out = "{\"path\":" + json_string(sum.path) + ",\"run_id\":" + json_string(schema.run_id) +
                    ",\"codec\":" + json_string(schema.codec) + ",\"spec\":" + json_string(schema.spec) +
                    ",\"columns\":[";
  for (size_t i = 0; i < schema.columns.size(); ++i) {
    const ex::ColumnSpec& c = schema.columns[i];
    out += std::string(i ? "," : "") + "{\"name\":" + json_string(c.name) + ",\"dtype\":\"" +
           ex::dtype_name(c.dtype) + "\",\"shape\":" + base::shape_text(c.shape, ",") + ",\"filter\":\"" +
           ex::filter_name(c.filter) + "\"}";
  }
  out += "],\"segments\":[";
  for (size_t i = 0; i < reader.segments().size(); ++i) {
    const ex::SegmentInfo& s = reader.segments()[i];
    out += std::string(i ? "," : "") + "{\"path\":" + json_string(s.path) +
           ",\"bytes\":" + std::to_string(s.file_size) + ",\"published\":" + json_bool(published(s)) +
           ",\"footer\":" + json_bool(s.has_footer) + ",\"chunks\":" + std::to_string(s.chunk_count) +
           ",\"records\":" + std::to_string(segment_records(reader, s)) +
           ",\"torn_at\":" + (s.torn_at ? std::to_string(*s.torn_at) : "null") + "}";
  }
  out += "],\"chunks\":" + std::to_string(reader.chunks().size()) +
         ",\"records\":" + std::to_string(sum.records) + ",\"steps\":" + std::to_string(sum.steps) +
         ",\"episodes\":" + std::to_string(sum.episodes) + ",\"actors\":[";
  for (auto it = sum.actors.begin(); it != sum.actors.end(); ++it) {
    out += (it == sum.actors.begin() ? "" : ",") + std::to_string(*it);
  }
  out += "],\"wall_time_ns\":";
  out += sum.first_time ? "{\"min\":" + std::to_string(*sum.first_time) +
                              ",\"max\":" + std::to_string(*sum.last_time) + "}"
                        : "null";
  out += ",\"bytes_raw\":" + std::to_string(sum.bytes_raw) +
         ",\"bytes_disk\":" + std::to_string(sum.bytes_disk) +
         ",\"compression_ratio\":" + shortest_text(sum.ratio()) + ",\"problems\":[";
  for (size_t i = 0; i < sum.problems.size(); ++i) {
    const ex::LogProblem& p = sum.problems[i];
    out += std::string(i ? "," : "") + "{\"file\":" + json_string(p.file) +
           ",\"chunk\":" + std::to_string(p.chunk) + ",\"offset\":" + std::to_string(p.offset) +
           ",\"torn\":" + json_bool(p.torn) + ",\"message\":" + json_string(p.message) + "}";
  }
  return out + "]}\n";
}

std::string info_text(const ex::LogReader& reader, const LogSummary& sum) {
  const ex::LogSchema& schema = reader.schema();
  std::string out;
  char line[512];
  auto add = [&](const char* label, const std::string& value) {
    std::snprintf(line, sizeof line, "%-11s %s\n", label, value.c_str());
    out += line;
  };
  add("log", sum.path);
  add("run id", schema.run_id);
  add("codec", schema.codec);
  add("spec", schema.spec);
  add("columns", std::to_string(schema.columns.size()));
  for (const ex::ColumnSpec& c : schema.columns) {
    const std::string shape = c.shape.empty() ? "" : base::shape_text(c.shape, ",");
    const std::string filter =
        c.filter == ex::ColumnFilter::kNone ? "" : std::string("  stored ") + ex::filter_name(c.filter);
    std::snprintf(line, sizeof line, "  %-20s %s%s%s\n", c.name.c_str(), ex::dtype_name(c.dtype),
                  shape.c_str(), filter.c_str());
    out += line;
  }
  add("segments", std::to_string(reader.segments().size()));
  for (const ex::SegmentInfo& s : reader.segments()) {
    const std::string torn = s.torn_at ? "  torn at offset " + std::to_string(*s.torn_at) : "";
    std::snprintf(line, sizeof line, "  %-30s %10llu bytes  %-9s %5zu chunks %7llu records%s\n",
                  base_name(s.path).c_str(), static_cast<unsigned long long>(s.file_size),
                  published(s) ? "published" : "partial", s.chunk_count,
                  static_cast<unsigned long long>(segment_records(reader, s)), torn.c_str());
    out += line;
  }
  add("chunks", std::to_string(reader.chunks().size()));
  add("records", std::to_string(sum.records) + " (unrolls)");
  add("steps", std::to_string(sum.steps));
  add("episodes", std::to_string(sum.episodes));
  std::string actors = std::to_string(sum.actors.size()) + (sum.actors.empty() ? "" : ":");
  for (const int32_t a : sum.actors) actors += " " + std::to_string(a);
  add("actors", actors);
  add("wall time",
      sum.first_time ? format_wall_time(*sum.first_time) + " .. " + format_wall_time(*sum.last_time) : "-");
  add("bytes", std::to_string(sum.bytes_raw) + " raw, " + std::to_string(sum.bytes_disk) +
                   " on disk, compression ratio " + base::number_text(sum.ratio(), 3));
  add("problems", sum.problems.empty() ? "none" : std::to_string(sum.problems.size()));
  for (const ex::LogProblem& p : sum.problems) out += "  " + p.message + "\n";
  return out;
}

}  // namespace

int info(const CommandLine& cl) {
  LogSummary sum;
  sum.path = one_path(cl);
  const ex::LogReader reader(sum.path);
  std::set<std::tuple<int32_t, int32_t, int64_t>> episodes;
  ex::RecordCursor cursor = reader.scan();
  while (std::optional<ex::Record> r = cursor.next()) {
    const ex::RecordMeta& m = r->meta;
    ++sum.records;
    sum.steps += static_cast<uint64_t>(m.steps);
    sum.bytes_raw += ex::record_raw_bytes(*r);
    episodes.insert({m.actor_id, m.env_id, m.episode_id});
    sum.actors.insert(m.actor_id);
    if (!sum.first_time || m.wall_time_ns < *sum.first_time) sum.first_time = m.wall_time_ns;
    if (!sum.last_time || m.wall_time_ns > *sum.last_time) sum.last_time = m.wall_time_ns;
  }
  sum.episodes = episodes.size();
  for (const ex::SegmentInfo& s : reader.segments()) sum.bytes_disk += s.file_size;
  sum.problems = reader.problems();
  sum.problems.insert(sum.problems.end(), cursor.problems().begin(), cursor.problems().end());
  const std::string out = cl.switches.count("--json") ? info_json(reader, sum) : info_text(reader, sum);
  std::fputs(out.c_str(), stdout);
  return cursor.problems().empty() ? 0 : 1;
}
}  // namespace moonseed::cli::log_cmd
