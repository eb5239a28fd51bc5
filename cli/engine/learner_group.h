// `moonseed run` as one rank of a learner group (docs/distributed.md,
// docs/distributed-design.md): what the run needs beyond a single learner.
//
//   - rank_config: the group's config as one rank's learner sees it: the
//     group's topology.actors (and local_actors) spread over the ranks;
//   - LocalRanks: rank 0 of a group on this host (topology.learners > 1, no
//     topology.rendezvous) starts ranks 1..N-1 (through a short-lived child,
//     so that they are not its children),
//     `moonseed-engine run RUN_DIR/config.lua --rank R ...`, output in
//     RUN_DIR/ranks/R/run.log;
//   - the group's numbers: each rank's report (rank_report), and rank 0's view
//     of the group (GroupView: sums over the ranks, and each rank's columns).
//
// Thread-safety: none; the run's control thread owns these.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "base/mutex.h"
#include "engine/config/experiment_config.h"
#include "engine/learner/stats.h"
#include "engine/run/metrics_log.h"

namespace moonseed::engine {
class C10dGroup;
}

namespace moonseed::cli {

// `group`'s config for rank `rank`'s learner: topology.actors and
// topology.local_actors (when not -1) split as evenly as they go, the lower
// ranks taking one more; the group's own fields (learners, rank, rendezvous)
// as for a single learner, which the learner then is, joined to the group.
engine::ExperimentConfig rank_config(const engine::ExperimentConfig& group, int rank);

// topology.listen for rank `rank` of a group on this host: tcp:HOST:PORT with
// PORT + rank when PORT is not 0 (they cannot share one port); unchanged otherwise.
std::string rank_listen_address(const std::string& listen, int rank);

// The rendezvous of a group on this host: a c10d FileStore in the run directory.
std::string local_rendezvous(const std::string& run_dir);

// The directory of rank `rank` > 0 given rank 0's run directory: RUN_DIR/ranks/R
// when this host sees RUN_DIR (one host, or a shared file system), else
// RUNS_DIR/BASENAME-rankR beside the runs of this host. Created.
std::string rank_directory(const std::string& group_run_dir, const std::string& runs_dir, int rank);

// Ranks 1..N-1 of a group on this host, as child processes.
class LocalRanks {
 public:
  // Starts them: `engine` run `config_lua` --rank R --world-size N --rendezvous
  // `rendezvous` --quiet --no-watch [extra...], each with stdout and stderr
  // appended to RUN_DIR/ranks/R/run.log. Throws std::runtime_error when one
  // cannot be started (those started are killed).
  LocalRanks(const std::string& engine, const std::string& run_dir, const std::string& config_lua, int world_size,
             const std::string& rendezvous, const std::vector<std::string>& extra);
  // Kills (SIGKILL) those still running, and waits for them to end.
  ~LocalRanks();
  LocalRanks(const LocalRanks&) = delete;
  LocalRanks& operator=(const LocalRanks&) = delete;

  // Waits at most `timeout_s` for every rank to exit, then kills the rest.
  // Returns the ranks' exit codes (137 for one killed here; -1 for one that
  // ended without writing its exit code: killed by someone else), rank 1 first.
  std::vector<int> wait(double timeout_s);

 private:
  // The exit code of rank i + 1 once it has ended (without `block`, only if it has).
  // The ranks are not this process's children (LocalActors reaps any child).
  void reap(size_t i, bool block);

  std::vector<pid_t> pids_;  // rank 1 first; -1 once ended
  std::vector<int> pidfds_;  // each rank's pidfd: its end and its kill, without racing pid reuse
  std::vector<int> codes_;
  std::vector<std::string> logs_;  // where each rank writes its exit code (RUN_DIR/ranks/R/exit_code)
};

// The values Moonseed keeps in the group's rendezvous store (its run
// directory, the checkpoint it resumes from, each hot config, each rank's
// report), signed with HMAC-SHA256 under the run's token when there is one, so
// that someone else who reaches the store cannot feed the ranks a config or a
// path (docs/security.md "Learner groups"). Without a token they are stored as
// they are. Thread-safe as C10dGroup's put/get.
class SealedValues {
 public:
  SealedValues(engine::C10dGroup& group, std::string token) : group_(group), token_(std::move(token)) {}
  void put(const std::string& key, const std::string& value);
  // Throws engine::GroupError for a value not signed with this run's token.
  std::string get(const std::string& key);
  void publish_report(const std::string& json);
  // Every rank's newest report; one that fails its signature counts as none.
  std::vector<std::optional<std::string>> reports();

 private:
  std::string seal(const std::string& key, const std::string& value) const;
  std::optional<std::string> open(const std::string& key, const std::string& stored) const;

  engine::C10dGroup& group_;
  const std::string token_;
};

// HMAC-SHA256 of `message` under `key`, lowercase hex (RFC 2104).
std::string hmac_sha256_hex(const std::string& key, const std::string& message);

// One rank's numbers for rank 0: a JSON object (rank_report) read back.
// `seq` counts the rank's reports (one a log tick): a new one tells rank 0
// that the rank is still reporting even when its counters stand still.
struct RankReport {
  int rank = 0;
  std::string host;
  double frames = 0, fps = 0, episodes = 0, return_mean = 0, return_count = 0;
  double eval_episodes = 0, eval_return_mean = 0, eval_return_count = 0;
  double optimizer_steps = 0, actors = 0;
  double seq = 0;
  std::string address;  // where the rank takes actors, as other hosts reach it ("" = not said)
};
// Bounds on what parse_rank_report takes from the store: a report is a few
// hundred bytes; a longer one is refused, a longer host name cut.
constexpr size_t kMaxRankReportBytes = 4096;
constexpr size_t kMaxRankHostBytes = 255;
std::string rank_report(int rank, const std::string& host, const engine::LearnerStats& s, double fps,
                        int64_t seq = 0, const std::string& address = "");
std::optional<RankReport> parse_rank_report(const std::string& json);

// Rank 0's view of the group from every rank's newest report (its own from
// `own`): the counters the run's rows, progress line and stop rules read are
// the group's (frames, fps, episodes, return means weighted by the episodes
// behind each rank's mean), and `add_columns` writes each rank's.
struct GroupView {
  engine::LearnerStats stats;  // `own` with the group's counters
  double fps = 0;
  std::vector<RankReport> ranks;  // those that have reported
  int world_size = 0;
  void add_columns(engine::MetricsRow& row) const;
};
GroupView group_view(const engine::LearnerStats& own, double own_fps, const std::string& own_host,
                     const std::vector<std::optional<std::string>>& reports, int world_size);

// What `status` (ctl, attach, the dashboard) shows of a group on rank 0: the
// view of the last log tick, and each rank's newest report with the time rank
// 0 first saw it (a new seq), on rank 0's own clock, so that the hosts' clocks
// need not agree. A rank whose report is older than stale_after_s(interval)
// is stale: hung, stopped, gone or cut off from the store.
class GroupStatus {
 public:
  // At each log tick of rank 0, `now_s` on the clock `ranks_json` is given.
  void update(const GroupView& view, double now_s);
  bool empty() const { return seen_.empty(); }
  const GroupView& view() const { return view_; }
  // `own` (rank 0's fresh stats) with the group's counters of the last tick.
  engine::LearnerStats with_group_counters(engine::LearnerStats own) const;
  // Every rank 0..world_size-1, by rank: [{"rank": R, "host": ..., "frames", "fps",
  // "episodes", "return_mean", "optimizer_steps", "actors", "report_age_s", "stale"}, ...];
  // a rank not heard from yet has nulls and "stale": true.
  std::string ranks_json(double now_s, double stale_after_s) const;
  // Three log intervals and five seconds: a rank hands a report to its group's
  // watchdog at each log tick, the watchdogs write and read the store at their
  // beats (at most a second apart, engine/group/c10d_group.cc), and rank 0
  // takes what its watchdog read at each of its own ticks: a live rank's new
  // report is seen within two beats and two ticks.
  static double stale_after_s(double log_interval_s) { return 3 * log_interval_s + 5; }

 private:
  struct Seen {
    RankReport report;
    double seen_s = 0;
  };
  GroupView view_;
  std::vector<std::optional<Seen>> seen_;  // by rank
};

// The address a rank gives for its actors: its bound `listen` address, with a
// wildcard host (0.0.0.0, ::) replaced by `reachable_host`, the address this
// host reaches the group from.
std::string rank_actor_address(const std::string& listen, const std::string& reachable_host);

// Where a rank of a group sends an actor that lets the group place it
// (`moonseed actor --any-rank`): the rank serving the fewest envs among those
// with a free actor slot, this rank on a tie; as of the ranks' newest reports
// plus the actors sent since (so that a burst of actors spreads out before the
// next reports). Thread-safe: update() on the run's thread, choose() on an io
// thread.
class ActorPlacement {
 public:
  explicit ActorPlacement(int own_rank) : own_rank_(own_rank) {}
  // Each rank's newest report (index = rank; nullopt: not heard from) and its
  // actor slots (rank_config's topology.actors).
  void update(const std::vector<std::optional<RankReport>>& reports, const std::vector<int>& slots);
  // Another rank's address, or nullopt to keep the actor here.
  std::optional<std::string> choose();

 private:
  struct Rank {
    std::string address;
    double actors = 0;  // reported, plus those sent since
    int slots = 0;
  };
  const int own_rank_;
  base::Mutex mu_;
  std::vector<std::optional<Rank>> ranks_ GUARDED_BY(mu_);
};

}  // namespace moonseed::cli
