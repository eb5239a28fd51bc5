// `moonseed log info|ls|cat|verify|merge PATH...`: experience logs from the
// command line (docs/experience-log.md is the user guide,
// docs/experience-log-format.md the bytes). The reading itself is
// explog/reader.h; this file turns its records into text.
//
// PATH is a run directory (its log is RUN_DIR/experience/), a log directory
// or one segment file. Exit codes: 0 success; 1 the log has a problem (verify
// found one, a chunk could not be read, merge inputs differ) or cannot be
// opened; 2 bad arguments (the message says which, and where the help is).
// Problems found at open (a torn tail, a skipped segment) are warnings on
// stderr for info/ls/cat/merge: every complete chunk is still read.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "base/text.h"
#include "cli/commands.h"
#include "cli/log_text.h"
#include "explog/episodes.h"
#include "explog/reader.h"
#include "explog/writer.h"

namespace moonseed::cli {
namespace {

namespace ex = explog;
namespace fs = std::filesystem;

const char* kLogUsage =
    "usage: moonseed log COMMAND [OPTIONS] PATH...\n"
    "\n"
    "Reads experience logs (docs/experience-log.md). PATH is a run directory (its\n"
    "log is RUN_DIR/experience/), a log directory, or one segment file.\n"
    "\n"
    "commands:\n"
    "  info PATH [--json]                  schema, segments, counts, sizes, problems\n"
    "  ls PATH [--actor N] [--episode N] [--json]\n"
    "                                      one line per episode\n"
    "  cat PATH [--episode N] [--actor N] [--since T] [--until T] [--limit N]\n"
    "                                      one JSON line per step\n"
    "  verify PATH                         check every checksum\n"
    "  merge OUT_DIR PATH...               one new log of every record, in wall-time order\n"
    "\n"
    "`moonseed log COMMAND --help` tells more about one command.\n"
    "Exit codes: 0 success, 1 a problem with a log, 2 bad arguments.\n";

const char* kInfoUsage =
    "usage: moonseed log info PATH [--json]\n"
    "\n"
    "The log's schema (run id, spec, codec, columns with dtype and per-step shape),\n"
    "its segments (size, published or .partial, chunks, records, where a torn one\n"
    "ends), the numbers of chunks, records (unrolls), steps, episodes and actors, the\n"
    "wall-time range, raw bytes (record meta and columns, uncompressed) against bytes\n"
    "on disk with the compression ratio raw/disk, and every problem found.\n"
    "--json prints the same as one JSON object.\n"
    "Exit code 1 when a chunk could not be read.\n";

const char* kLsUsage =
    "usage: moonseed log ls PATH [--actor N] [--episode N] [--json]\n"
    "\n"
    "One line per episode, in the order episodes first appear in the log. An\n"
    "episode is the records (unrolls) with the same actor, env and episode id:\n"
    "  episode actor env steps return end first_wall_time\n"
    "return is the sum of the column named \"reward\" (\"-\" without one); end is\n"
    "terminated, truncated, ended (last unroll without either flag) or open (its\n"
    "last unroll is not in the log). --actor and --episode keep only those.\n"
    "--json prints one JSON object per episode instead.\n"
    "Exit code 1 when a chunk could not be read.\n";

const char* kCatUsage =
    "usage: moonseed log cat PATH [--episode N] [--actor N] [--since T] [--until T]\n"
    "                             [--limit N]\n"
    "\n"
    "One JSON object per step, in log order: the record's meta (episode_id,\n"
    "actor_id, env_id, first_step, steps, wall_time_ns, learner_step,\n"
    "config_version and the unroll's flags is_first, is_last, terminated,\n"
    "truncated), the step's index in its episode (\"step\") and in its unroll\n"
    "(\"t\"), and under \"columns\" every column's values at that step (nested\n"
    "arrays for shaped columns). Integers are exact; floats are printed with the\n"
    "fewest digits that read back to the same value (NaN and Infinity as Python's\n"
    "json module writes them).\n"
    "--since/--until T keep records stamped in [since, until]; T is nanoseconds\n"
    "since the Unix epoch or a UTC time such as 2026-11-23T14:47:49.5Z.\n"
    "--limit N stops after N steps.\n"
    "Exit code 1 when a chunk could not be read.\n";

const char* kVerifyUsage =
    "usage: moonseed log verify PATH\n"
    "\n"
    "Reads every chunk of every segment: header and data checksums, decompression,\n"
    "sizes, and that a footer's index agrees with the chunks. Prints each problem\n"
    "(file, chunk, offset, message), then a summary. A torn tail (a writer killed\n"
    "mid-chunk) is a problem, but the complete chunks before it are readable.\n"
    "Exit code 0 when the log is clean, 1 when anything is wrong.\n";

const char* kMergeUsage =
    "usage: moonseed log merge OUT_DIR PATH [PATH...]\n"
    "\n"
    "Writes one new log in OUT_DIR holding every record of the input logs in\n"
    "wall-time order (each input is in wall-time order already; ties keep the\n"
    "input order). The inputs must have the same columns and spec; the first\n"
    "difference is named otherwise. The new log is written with the first input's\n"
    "codec and column filters; its run id is the inputs' run ids joined by '+'.\n"
    "OUT_DIR must not hold a log already.\n"
    "Exit code 1 when inputs differ, a chunk could not be read, or writing failed.\n";

// Bad arguments: reported with a pointer to the help, exit code 2.
class UsageError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// ---- arguments ----

struct CommandLine {
  std::vector<std::string> paths;
  std::map<std::string, std::string> values;  // "--actor" -> "3"
  std::set<std::string> switches;             // "--json"
};

// Options are "--name value" or "--name=value"; everything else is a path.
CommandLine parse_command_line(const Args& args, size_t first, const std::set<std::string>& value_options,
                               const std::set<std::string>& switch_options) {
  CommandLine out;
  for (size_t i = first; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg.size() < 2 || arg[0] != '-') {
      out.paths.push_back(arg);
      continue;
    }
    std::string name = arg;
    std::optional<std::string> value;
    const size_t eq = arg.find('=');
    if (arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
    }
    if (switch_options.count(name)) {
      if (value) throw UsageError(name + " takes no value");
      out.switches.insert(name);
      continue;
    }
    if (!value_options.count(name)) throw UsageError("unknown option '" + arg + "'");
    if (!value) {
      if (i + 1 >= args.size()) throw UsageError(name + " needs a value");
      value = args[++i];
    }
    if (out.values.count(name)) throw UsageError(name + " given twice");
    out.values[name] = *value;
  }
  return out;
}

int64_t integer_option(const std::string& option, const std::string& text, int64_t min, int64_t max) {
  const std::optional<int64_t> v = parse_integer(text, min, max);
  if (!v) {
    throw UsageError(option + " expects an integer in [" + std::to_string(min) + ", " + std::to_string(max) +
                     "], got '" + text + "'");
  }
  return *v;
}

int64_t time_option(const std::string& option, const std::string& text) {
  const std::optional<int64_t> v = parse_wall_time(text);
  if (!v) {
    throw UsageError(option + " expects nanoseconds since the epoch or a UTC time like " +
                     "2026-11-23T14:47:49.5Z, got '" + text + "'");
  }
  return *v;
}

// ---- text ----

const char* yes_no(bool b) { return b ? "true" : "false"; }

std::string base_name(const std::string& path) { return fs::path(path).filename().string(); }

// ---- reading ----

// Where the log of `path` is: RUN_DIR/experience when there is one, else `path` itself.
std::string log_location(const std::string& path) {
  std::error_code ec;
  const fs::path experience = fs::path(path) / "experience";
  if (fs::is_directory(experience, ec)) return experience.string();
  if (!fs::exists(path, ec)) throw std::runtime_error(path + " does not exist");
  return path;
}

void warn_about(const std::vector<ex::LogProblem>& problems) {
  for (const ex::LogProblem& p : problems)
    std::fprintf(stderr, "moonseed log: warning: %s\n", p.message.c_str());
}

// Chunks that could not be decoded: errors on stderr; true when there were any.
bool report_unreadable(const std::vector<ex::LogProblem>& problems) {
  for (const ex::LogProblem& p : problems) {
    std::fprintf(stderr, "moonseed log: skipped an unreadable chunk: %s\n", p.message.c_str());
  }
  return !problems.empty();
}

std::string one_path(const CommandLine& cl) {
  if (cl.paths.size() != 1) {
    throw UsageError(std::string(cl.paths.empty() ? "expected a PATH" : "expected one PATH, got ") +
                     (cl.paths.empty() ? "" : std::to_string(cl.paths.size())));
  }
  return log_location(cl.paths[0]);
}

ex::RecordFilter filter_from(const CommandLine& cl) {
  ex::RecordFilter f;
  const auto has = [&](const char* name) { return cl.values.count(name) > 0; };
  if (has("--episode")) {
    f.episode_id = integer_option("--episode", cl.values.at("--episode"), std::numeric_limits<int64_t>::min(),
                                  std::numeric_limits<int64_t>::max());
  }
  if (has("--actor")) {
    f.actor_id = static_cast<int32_t>(integer_option("--actor", cl.values.at("--actor"),
                                                     std::numeric_limits<int32_t>::min(),
                                                     std::numeric_limits<int32_t>::max()));
  }
  if (has("--since")) f.min_wall_time_ns = time_option("--since", cl.values.at("--since"));
  if (has("--until")) f.max_wall_time_ns = time_option("--until", cl.values.at("--until"));
  return f;
}

// ---- info ----

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
           ",\"bytes\":" + std::to_string(s.file_size) + ",\"published\":" + yes_no(published(s)) +
           ",\"footer\":" + yes_no(s.has_footer) + ",\"chunks\":" + std::to_string(s.chunk_count) +
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
           ",\"torn\":" + yes_no(p.torn) + ",\"message\":" + json_string(p.message) + "}";
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
  char bytes[128];
  std::snprintf(bytes, sizeof bytes, "%llu raw, %llu on disk, compression ratio %.2f",
                static_cast<unsigned long long>(sum.bytes_raw),
                static_cast<unsigned long long>(sum.bytes_disk), sum.ratio());
  add("bytes", bytes);
  add("problems", sum.problems.empty() ? "none" : std::to_string(sum.problems.size()));
  for (const ex::LogProblem& p : sum.problems) out += "  " + p.message + "\n";
  return out;
}

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

// ---- ls ----

int ls(const CommandLine& cl) {
  const ex::RecordFilter filter = filter_from(cl);  // bad options before a missing path
  const std::string path = one_path(cl);
  const ex::LogReader reader(path);
  warn_about(reader.problems());
  const bool reward = ex::reward_column(reader.schema()).has_value();
  std::vector<ex::LogProblem> unreadable;
  const std::vector<ex::EpisodeSummary> episodes = ex::summarize_episodes(reader, filter, &unreadable);
  const bool json = cl.switches.count("--json") > 0;
  std::string out;
  char line[256];
  if (!json) {
    std::snprintf(line, sizeof line, "%10s %6s %6s %8s %14s %-10s %s\n", "episode", "actor", "env", "steps",
                  "return", "end", "first_wall_time");
    out += line;
  }
  for (const ex::EpisodeSummary& e : episodes) {
    const std::string ret = reward ? shortest_text(e.total_reward) : (json ? "null" : "-");
    if (json) {
      out += "{\"episode_id\":" + std::to_string(e.episode_id) +
             ",\"actor_id\":" + std::to_string(e.actor_id) + ",\"env_id\":" + std::to_string(e.env_id) +
             ",\"first_step\":" + std::to_string(e.first_step) + ",\"steps\":" + std::to_string(e.steps) +
             ",\"return\":" + ret + ",\"end\":\"" + ex::episode_end(e) +
             "\",\"first_wall_time_ns\":" + std::to_string(e.first_wall_time_ns) + "}\n";
    } else {
      std::snprintf(line, sizeof line, "%10lld %6d %6d %8lld %14s %-10s %s\n",
                    static_cast<long long>(e.episode_id), e.actor_id, e.env_id,
                    static_cast<long long>(e.steps), ret.c_str(), ex::episode_end(e),
                    format_wall_time(e.first_wall_time_ns).c_str());
      out += line;
    }
  }
  std::fputs(out.c_str(), stdout);
  return report_unreadable(unreadable) ? 1 : 0;
}

// ---- cat ----

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
        ",\"is_first\":" + yes_no(m.flags & ex::kIsFirst) + ",\"is_last\":" + yes_no(m.flags & ex::kIsLast) +
        ",\"terminated\":" + yes_no(m.flags & ex::kTerminated) +
        ",\"truncated\":" + yes_no(m.flags & ex::kTruncated);
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

// ---- verify ----

int verify(const CommandLine& cl) {
  const std::string path = one_path(cl);
  const ex::LogReader reader(path);
  const std::vector<ex::LogProblem> problems = reader.verify();
  std::set<std::pair<std::string, int64_t>> bad_chunks;  // (file, chunk) with a problem, tears aside
  for (const ex::LogProblem& p : problems) {
    // The reader's messages start with where they are; that is in the line's prefix already.
    const std::string where = "chunk " + std::to_string(p.chunk) + " at offset " + std::to_string(p.offset) +
                              " of " + p.file + ": ";
    const bool located = p.message.compare(0, where.size(), where) == 0;
    std::printf("%s: chunk %s, offset %llu: %s\n", p.file.c_str(),
                p.chunk < 0 ? "-" : std::to_string(p.chunk).c_str(),
                static_cast<unsigned long long>(p.offset),
                located ? p.message.c_str() + where.size() : p.message.c_str());
    if (p.chunk >= 0 && !p.torn) bad_chunks.insert({p.file, p.chunk});
  }
  const size_t chunks = reader.chunks().size();
  std::printf("%zu segments, %zu chunks, %llu records: ", reader.segments().size(), chunks,
              static_cast<unsigned long long>(reader.record_count()));
  if (problems.empty()) {
    std::printf("every checksum is good\n");
    return 0;
  }
  std::printf("%zu problems, %zu bad chunks\n", problems.size(), bad_chunks.size());
  for (const ex::SegmentInfo& s : reader.segments()) {
    if (!s.torn_at) continue;
    size_t bad_before = 0;
    for (const auto& [file, chunk] : bad_chunks) bad_before += file == s.path ? 1 : 0;
    std::printf("%s is torn at offset %llu (a writer stopped mid-chunk): ", s.path.c_str(),
                static_cast<unsigned long long>(*s.torn_at));
    if (bad_before == 0) {
      std::printf("the %zu complete chunks before it are fine\n", s.chunk_count);
    } else {
      std::printf("of the %zu complete chunks before it, %zu are bad (above)\n", s.chunk_count, bad_before);
    }
  }
  return 1;
}

// ---- merge ----

// The first way `b` differs from `a` in what a merged log needs to be the same; "" when none.
std::string first_difference(const ex::LogSchema& a, const ex::LogSchema& b) {
  const size_t n = std::min(a.columns.size(), b.columns.size());
  for (size_t i = 0; i < n; ++i) {
    const ex::ColumnSpec& x = a.columns[i];
    const ex::ColumnSpec& y = b.columns[i];
    const std::string which = "column " + std::to_string(i) + " ";
    if (x.name != y.name) return which + "is named " + x.name + " vs " + y.name;
    if (x.dtype != y.dtype) {
      return which + x.name + " has dtype " + ex::dtype_name(x.dtype) + " vs " + ex::dtype_name(y.dtype);
    }
    if (x.shape != y.shape)
      return which + x.name + " has shape " + base::shape_text(x.shape, ",") + " vs " + base::shape_text(y.shape, ",");
  }
  if (a.columns.size() != b.columns.size()) {
    return std::to_string(a.columns.size()) + " columns vs " + std::to_string(b.columns.size());
  }
  if (a.spec != b.spec) return "spec " + a.spec + " vs " + b.spec;
  return "";
}

int merge(const CommandLine& cl) {
  if (cl.paths.size() < 2) throw UsageError("expected OUT_DIR and at least one log to merge");
  const std::string out_dir = cl.paths[0];
  std::vector<std::unique_ptr<ex::LogReader>> readers;
  std::vector<const ex::LogReader*> inputs;
  for (size_t i = 1; i < cl.paths.size(); ++i) {
    readers.push_back(std::make_unique<ex::LogReader>(log_location(cl.paths[i])));
    inputs.push_back(readers.back().get());
    warn_about(readers.back()->problems());
  }
  ex::LogSchema schema = readers[0]->schema();
  std::vector<std::string> run_ids = {schema.run_id};
  for (size_t i = 1; i < readers.size(); ++i) {
    const std::string diff = first_difference(schema, readers[i]->schema());
    if (!diff.empty()) {
      throw std::runtime_error("cannot merge " + cl.paths[i + 1] + " with " + cl.paths[1] + ": " + diff);
    }
    const std::string& id = readers[i]->schema().run_id;
    bool seen = false;
    for (const std::string& r : run_ids) seen = seen || r == id;
    if (!seen) run_ids.push_back(id);
  }
  for (size_t i = 1; i < run_ids.size(); ++i) schema.run_id += "+" + run_ids[i];

  std::error_code ec;
  if (fs::is_directory(out_dir, ec)) {
    for (const auto& entry : fs::directory_iterator(out_dir, ec)) {
      if (entry.path().filename().string().find(".mslog") != std::string::npos) {
        throw std::runtime_error(out_dir + " already holds an experience log (" +
                                 entry.path().filename().string() + "); merge writes a new one");
      }
    }
  }
  ex::WriterOptions options;
  options.directory = out_dir;
  options.full_queue = ex::FullQueuePolicy::kBackpressure;
  ex::LogWriter writer(schema, options);
  ex::MergedCursor cursor(inputs);
  uint64_t merged = 0;
  while (std::optional<ex::Record> r = cursor.next()) {
    writer.append(std::move(*r));
    ++merged;
  }
  writer.close();
  const ex::WriterStats stats = writer.stats();
  if (!stats.error.empty()) throw std::runtime_error("writing " + out_dir + " failed: " + stats.error);
  if (stats.dropped > 0) {
    throw std::runtime_error("writing " + out_dir + " dropped " + std::to_string(stats.dropped) + " records");
  }
  const bool unreadable = report_unreadable(cursor.problems());
  std::printf("merged %llu records from %zu logs into %s (%llu segments, %llu bytes)\n",
              static_cast<unsigned long long>(merged), readers.size(), out_dir.c_str(),
              static_cast<unsigned long long>(stats.segments),
              static_cast<unsigned long long>(stats.bytes_disk));
  return unreadable ? 1 : 0;
}

struct Subcommand {
  const char* name;
  const char* usage;
  std::set<std::string> value_options;
  std::set<std::string> switch_options;
  int (*run)(const CommandLine&);
};

}  // namespace

int log_command(const Args& args) {
  if (args.empty() || args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
    std::fputs(kLogUsage, args.empty() ? stderr : stdout);
    return args.empty() ? 2 : 0;
  }
  const Subcommand subcommands[] = {
      {"info", kInfoUsage, {}, {"--json"}, info},
      {"ls", kLsUsage, {"--actor", "--episode"}, {"--json"}, ls},
      {"cat", kCatUsage, {"--episode", "--actor", "--since", "--until", "--limit"}, {}, cat},
      {"verify", kVerifyUsage, {}, {}, verify},
      {"merge", kMergeUsage, {}, {}, merge},
  };
  for (const Subcommand& sub : subcommands) {
    if (args[0] != sub.name) continue;
    if (wants_help(args)) {
      std::fputs(sub.usage, stdout);
      return 0;
    }
    try {
      return sub.run(parse_command_line(args, 1, sub.value_options, sub.switch_options));
    } catch (const UsageError& e) {
      std::fprintf(stderr, "moonseed log %s: %s (see moonseed log %s --help)\n", sub.name, e.what(),
                   sub.name);
      return 2;
    }
  }
  std::fprintf(stderr, "moonseed log: unknown command '%s'\n\n%s", args[0].c_str(), kLogUsage);
  return 2;
}

}  // namespace moonseed::cli
