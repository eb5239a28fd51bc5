// `moonseed log info|ls|cat|verify|merge PATH...`: experience logs from the
// command line (docs/experience-log.md is the user guide,
// docs/experience-log-format.md the bytes). The reading itself is
// explog/reader.h; each subcommand turns its records into text in a file of
// its own (cli/launcher/log_args.h names them). This one holds the help texts and picks
// the subcommand.
//
// PATH is a run directory (its log is RUN_DIR/experience/), a log directory
// or one segment file. Exit codes: 0 success; 1 the log has a problem (verify
// found one, a chunk could not be read, merge inputs differ) or cannot be
// opened; 2 bad arguments (the message says which, and where the help is).
// Problems found at open (a torn tail, a skipped segment) are warnings on
// stderr for info/ls/cat/merge: every complete chunk is still read.
#include <cstdio>
#include <set>
#include <string>

#include "cli/common/commands.h"
#include "cli/launcher/log_args.h"

namespace moonseed::cli {
namespace {

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

struct Subcommand {
  const char* name;
  const char* usage;
  std::set<std::string> value_options;
  std::set<std::string> switch_options;
  int (*run)(const log_cmd::CommandLine&);
};

}  // namespace

int log_command(const Args& args) {
  if (args.empty() || args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
    std::fputs(kLogUsage, args.empty() ? stderr : stdout);
    return args.empty() ? 2 : 0;
  }
  const Subcommand subcommands[] = {
      {"info", kInfoUsage, {}, {"--json"}, log_cmd::info},
      {"ls", kLsUsage, {"--actor", "--episode"}, {"--json"}, log_cmd::ls},
      {"cat", kCatUsage, {"--episode", "--actor", "--since", "--until", "--limit"}, {}, log_cmd::cat},
      {"verify", kVerifyUsage, {}, {}, log_cmd::verify},
      {"merge", kMergeUsage, {}, {}, log_cmd::merge},
  };
  for (const Subcommand& sub : subcommands) {
    if (args[0] != sub.name) continue;
    if (wants_help(args)) {
      std::fputs(sub.usage, stdout);
      return 0;
    }
    try {
      return sub.run(log_cmd::parse_command_line(args, 1, sub.value_options, sub.switch_options));
    } catch (const log_cmd::UsageError& e) {
      std::fprintf(stderr, "moonseed log %s: %s (see moonseed log %s --help)\n", sub.name, e.what(),
                   sub.name);
      return 2;
    }
  }
  std::fprintf(stderr, "moonseed log: unknown command '%s'\n\n%s", args[0].c_str(), kLogUsage);
  return 2;
}

}  // namespace moonseed::cli
