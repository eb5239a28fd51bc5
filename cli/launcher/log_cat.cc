// `moonseed log cat`: one JSON object per step, in log order.
#include <cstdint>
#include <cstdio>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "cli/launcher/log_args.h"
#include "cli/common/log_text.h"
#include "explog/reader.h"

namespace moonseed::cli::log_cmd {

namespace ex = explog;

int cat(const CommandLine& cl) {
  const ex::RecordFilter filter = filter_from(cl);
  std::optional<int64_t> limit;
  if (cl.values.count("--limit")) {
    limit = integer_option("--limit", cl.values.at("--limit"), 0, std::numeric_limits<int64_t>::max());
  }
  const std::string path = one_path(cl);
  const ex::LogReader reader(path);
  warn_about(reader.problems());
  const ex::LogSchema& schema = reader.schema();
  // The column names as JSON keys, escaped once.
  std::vector<std::string> keys;
  for (const ex::ColumnSpec& c : schema.columns) keys.push_back(json_string(c.name) + ":");

  int64_t printed = 0;
  std::string line;
  ex::RecordCursor cursor = reader.scan(filter);
  while (!limit || printed < *limit) {
    const std::optional<ex::Record> r = cursor.next();
    if (!r) break;
    const ex::RecordMeta& m = r->meta;
    // The part of the line every step of the record shares.
    const std::string meta =
        "\"episode_id\":" + std::to_string(m.episode_id) + ",\"actor_id\":" + std::to_string(m.actor_id) +
        ",\"env_id\":" + std::to_string(m.env_id) + ",\"first_step\":" + std::to_string(m.first_step) +
        ",\"steps\":" + std::to_string(m.steps) + ",\"wall_time_ns\":" + std::to_string(m.wall_time_ns) +
        ",\"learner_step\":" + std::to_string(m.learner_step) +
        ",\"config_version\":" + std::to_string(m.config_version) +
        ",\"is_first\":" + json_bool(m.flags & ex::kIsFirst) + ",\"is_last\":" + json_bool(m.flags & ex::kIsLast) +
        ",\"terminated\":" + json_bool(m.flags & ex::kTerminated) +
        ",\"truncated\":" + json_bool(m.flags & ex::kTruncated);
    for (int32_t t = 0; t < m.steps && (!limit || printed < *limit); ++t, ++printed) {
      line = "{" + meta + ",\"step\":" + std::to_string(m.first_step + t) + ",\"t\":" + std::to_string(t) +
             ",\"columns\":{";
      for (size_t c = 0; c < schema.columns.size(); ++c) {
        if (c > 0) line += ',';
        line += keys[c];
        append_step_json(line, schema.columns[c],
                         r->columns[c].data() + static_cast<size_t>(t) * schema.columns[c].step_bytes());
      }
      line += "}}\n";
      std::fwrite(line.data(), 1, line.size(), stdout);
    }
  }
  std::fflush(stdout);
  return report_unreadable(cursor.problems()) ? 1 : 0;
}
}  // namespace moonseed::cli::log_cmd
