#include "cli/launcher/log_args.h"

#include <cstdio>
#include <filesystem>
#include <limits>
#include <optional>
#include <system_error>

#include "cli/common/log_text.h"

namespace moonseed::cli::log_cmd {

namespace ex = explog;
namespace fs = std::filesystem;

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

std::string log_location(const std::string& path) {
  std::error_code ec;
  const fs::path experience = fs::path(path) / "experience";
  if (fs::is_directory(experience, ec)) return experience.string();
  if (!fs::exists(path, ec)) throw std::runtime_error(path + " does not exist");
  return path;
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

void warn_about(const std::vector<ex::LogProblem>& problems) {
  for (const ex::LogProblem& p : problems)
    std::fprintf(stderr, "moonseed log: warning: %s\n", p.message.c_str());
}

bool report_unreadable(const std::vector<ex::LogProblem>& problems) {
  for (const ex::LogProblem& p : problems) {
    std::fprintf(stderr, "moonseed log: skipped an unreadable chunk: %s\n", p.message.c_str());
  }
  return !problems.empty();
}

}  // namespace moonseed::cli::log_cmd
