// `moonseed log ls`: one line (or JSON object) per episode, in the order episodes first appear.
#include <cstdio>
#include <string>
#include <vector>

#include "cli/launcher/log_args.h"
#include "cli/common/log_text.h"
#include "explog/episodes.h"
#include "explog/reader.h"

namespace moonseed::cli::log_cmd {

namespace ex = explog;

int ls(const CommandLine& cl) {
  const ex::RecordFilter filter = filter_from(cl);  // bad options before a missing path
  const std::string path = one_path(cl);
  const ex::LogReader reader(path);
  warn_about(reader.problems());
  const bool reward = ex::reward_column(reader.schema()).has_value();
  std::vector<ex::LogProblem> unreadable;
  const std::vector<ex::EpisodeSummary> episodes = ex::summarize_episodes(reader, filter, &unreadable);
  const bool json = cl.switches.count("--json") > 0;
  // "return" is the env's own; the shaped return (the "reward" column) beside
  // it when the log says the two differ: a run with reward shaping.
  bool shaped = false;
  if (ex::env_reward_column(reader.schema())) {
    for (const ex::EpisodeSummary& e : episodes) shaped = shaped || e.total_reward != e.env_return;
  }
  std::string out;
  char line[256];
  if (!json) {
    std::snprintf(line, sizeof line, "%10s %6s %6s %8s %14s%s %-10s %s\n", "episode", "actor", "env", "steps",
                  "return", shaped ? " shaped_return" : "", "end", "first_wall_time");
    out += line;
  }
  for (const ex::EpisodeSummary& e : episodes) {
    const std::string ret = reward ? shortest_text(e.env_return) : (json ? "null" : "-");
    const std::string shaped_ret = shortest_text(e.total_reward);
    if (json) {
      out += "{\"episode_id\":" + std::to_string(e.episode_id) +
             ",\"actor_id\":" + std::to_string(e.actor_id) + ",\"env_id\":" + std::to_string(e.env_id) +
             ",\"first_step\":" + std::to_string(e.first_step) + ",\"steps\":" + std::to_string(e.steps) +
             ",\"return\":" + ret + (shaped ? ",\"shaped_return\":" + shaped_ret : std::string()) +
             ",\"end\":\"" + ex::episode_end(e) +
             "\",\"first_wall_time_ns\":" + std::to_string(e.first_wall_time_ns) + "}\n";
    } else {
      char cell[32] = "";
      if (shaped) std::snprintf(cell, sizeof cell, " %13s", shaped_ret.c_str());
      std::snprintf(line, sizeof line, "%10lld %6d %6d %8lld %14s%s %-10s %s\n",
                    static_cast<long long>(e.episode_id), e.actor_id, e.env_id,
                    static_cast<long long>(e.steps), ret.c_str(), cell, ex::episode_end(e),
                    format_wall_time(e.first_wall_time_ns).c_str());
      out += line;
    }
  }
  std::fputs(out.c_str(), stdout);
  return report_unreadable(unreadable) ? 1 : 0;
}
}  // namespace moonseed::cli::log_cmd
