// What the files of `moonseed log` share: its command line, how a PATH
// becomes a log, and the subcommands' entry points. cli/launcher/log_command.cc holds
// the help texts and picks the subcommand; cli/launcher/log_info.cc, log_ls.cc,
// log_cat.cc, log_verify.cc and log_merge.cc are one subcommand each.
//
// Contract: bad arguments throw UsageError, which log_command() reports with a
// pointer to the subcommand's help (exit code 2); a PATH that does not exist or
// a log that cannot be opened throws std::runtime_error (main: exit code 1).
// A subcommand returns the process exit code; its output goes to stdout,
// warnings and errors to stderr.
// Thread-safety: no shared state; the functions run on the CLI's one thread.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "cli/common/commands.h"
#include "explog/reader.h"

namespace moonseed::cli::log_cmd {

// Bad arguments: reported with a pointer to the help, exit code 2.
class UsageError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

struct CommandLine {
  std::vector<std::string> paths;
  std::map<std::string, std::string> values;  // "--actor" -> "3"
  std::set<std::string> switches;             // "--json"
};

// args[first...]: options are "--name value" or "--name=value" (only those
// named in value_options, each at most once) or a switch of switch_options;
// everything else is a path.
CommandLine parse_command_line(const Args& args, size_t first, const std::set<std::string>& value_options,
                               const std::set<std::string>& switch_options);

// The value of `option` as an integer in [min, max], or a UsageError naming it.
int64_t integer_option(const std::string& option, const std::string& text, int64_t min, int64_t max);

// The value of `option` as nanoseconds since the epoch (an integer or a UTC time).
int64_t time_option(const std::string& option, const std::string& text);

// Where the log of `path` is: RUN_DIR/experience when there is one, else `path` itself.
std::string log_location(const std::string& path);

// The log of the command line's only PATH; a UsageError unless there is exactly one.
std::string one_path(const CommandLine& cl);

// The records --episode, --actor, --since and --until keep.
explog::RecordFilter filter_from(const CommandLine& cl);

// Problems found at open, as warnings on stderr: every complete chunk is still read.
void warn_about(const std::vector<explog::LogProblem>& problems);

// Chunks that could not be decoded: errors on stderr; true when there were any.
bool report_unreadable(const std::vector<explog::LogProblem>& problems);

// The subcommands, given their parsed command line.
int info(const CommandLine& cl);
int ls(const CommandLine& cl);
int cat(const CommandLine& cl);
int verify(const CommandLine& cl);
int merge(const CommandLine& cl);

}  // namespace moonseed::cli::log_cmd
