// One training run of `moonseed run`: its learner, rpc server, local actors,
// control socket and hot reload, driven by a control loop. run_command()
// parses the arguments and drives it:
//
//   Run run(options);
//   run.setup();             // load, run directory, learner, server, actors, control socket
//   while (run.tick()) {}    // one tick: wait (at most kStopCheckPeriod_s), reload, stop rules;
//                            // every log.interval_s also the metrics row, progress, checkpoint
//   return run.finish();     // Bye, actors, learner, final checkpoint, stop row, summary
//
// Ownership: the Run owns every part of the run. Destroying it (after
// finish(), or after an exception from any step) stops the learner's threads
// before the rpc server they may pump, and kills the local actors still running.
//
// Failures: setup() throws what loading the experiment, the run directory, a
// restore or a warm start throws (the caller prints it). tick() does not throw
// for a metrics row or checkpoint it cannot write (a full disk): it logs it,
// keeps the last good checkpoint, tries again at the next interval, and
// training goes on. finish() returns 1 when the final checkpoint fails and no
// earlier one is left to resume from, or when the model diverged (its weights
// went non-finite: the run stops, writes no final checkpoint and keeps the last
// good one), else 0 (docs/reliability.md).
//
// Thread-safety: none. One thread calls everything; setup() blocks SIGINT and
// SIGTERM for every thread started after it, so they arrive in tick().
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/engine/best_checkpoint.h"
#include "cli/engine/learner_group.h"
#include "engine/config/experiment_config.h"
#include "engine/learner/stats.h"
#include "engine/run/metrics_log.h"
#include "engine/run/run_directory.h"
#include "envs/spec.h"
#include "scripts/loader/experiment_loader.h"

namespace moonseed {
namespace dashboard {
class Server;
}
namespace engine {
class C10dGroup;
class Learner;
}
namespace rpc {
class ControlServer;
class Server;
}  // namespace rpc
}  // namespace moonseed

namespace moonseed::cli {

class HotReload;
class LocalActors;
class LocalRanks;
class SealedValues;
class Progress;
class RunControl;
class SignalWaiter;
class TensorboardSink;

// What the command line asks of a run.
struct RunOptions {
  std::string script;                  // the experiment script, or
  std::string resume_dir;              // a run directory to continue (--resume)
  std::vector<std::string> overrides;  // key=value
  bool quiet = false;                  // no progress line
  bool watch = true;                   // hot reload on saving the script
  std::string announce;                // a file to write the run directory's path to
  bool log_in_run_dir = false;         // stdout and stderr to RUN_DIR/run.log once it exists
  std::string auth_token_file;         // the token actors must present (else $MOONSEED_AUTH_TOKEN)
  bool insecure = false;               // listen beyond this host without a token
};

// From here on, stdout and stderr (this process's and its children's) append
// to `path`: a run started in the background keeps its output beside its results.
void send_output_to(const std::string& path);

class Run {
 public:
  explicit Run(RunOptions options);
  ~Run();
  Run(const Run&) = delete;
  Run& operator=(const Run&) = delete;

  void setup();
  // One turn of the control loop. Returns false once the run is to stop
  // (stop_reason() says why): a stop rule, a signal or `stop` on the control socket.
  bool tick();
  // Ends the run, in this order: Bye to the actors (server stop), the actors'
  // exit, the learner's threads, the final checkpoint (it holds every step
  // trained), the metrics "stop" row, the summary lines. Returns the exit code.
  int finish();

  const std::string& stop_reason() const { return stop_reason_; }

 private:
  void open_run_directory();
  // A learner group (topology.learners > 1): rank 0 starts the ranks of a group
  // on this host, every rank joins (C10dGroup), rank 0 names its run directory
  // and the others take theirs from it (cli/engine/learner_group.h).
  void join_group();
  // The learner group's side of starting (cli/engine/run_group.cc): the learner's
  // hooks into the group, each rank resumed from the group's checkpoint and
  // its own part, the placement of actors that let the group choose their
  // rank (`listening_at`: this rank's actor address), and that placement
  // brought up to date with the ranks' reports at each log tick.
  void join_learner_to_group();
  engine::Counters resume_group();
  void report_rank_part(const std::string& part, int64_t group_step);  // warns when the part is of an earlier step
  std::string choose_rank_part(int64_t at_most_step);  // the newest good part, skipping damaged ones
  void place_actors(const std::string& listening_at);
  void update_placement(const std::string& own_report, const std::vector<std::optional<std::string>>& reports);
  // The learner's stats, and for rank 0 of a group the group's counters in
  // them (cli/engine/learner_group.h GroupView). With `columns` (once a log tick) the
  // rank reports `fps` to the group, and rank 0 writes each rank's columns
  // there and the group's frame rate in `group_fps`.
  engine::LearnerStats run_stats(double fps, engine::MetricsRow* columns, double* group_fps);
  // Sets stop_reason_ when the group failed (exit 3) or agreed to stop.
  void check_group();
  int rank() const;
  void protect();  // umask, auth token, and no open listening without one
  engine::Counters start_learner();  // returns the counters it starts from
  // --resume: restores the newest good checkpoint (complete, undamaged, loaded; older ones are
  // tried in turn); its path in `checkpoint` when given. A run directory without any checkpoint
  // (killed before its first) starts over from step 0, `checkpoint` "" (in a group the other
  // ranks then start from 0 too).
  engine::Counters resume(std::string* checkpoint = nullptr);
  void lock_run_directory();         // throws when another run holds dir_
  void append_resume_row(const std::string& checkpoint, const engine::Counters& start);
  // Every checkpoint of the run (periodic, final, `ctl checkpoint`): saves one named after the
  // step it holds, prunes, then keep_best with `s`; throws what saving throws.
  std::string checkpoint(double elapsed, const engine::LearnerStats& s);
  // After a checkpoint: best.pt and best.json when its metric in `s` is the best so far
  // (cli/engine/best_checkpoint.h), and a "checkpoint" event row either way.
  void keep_best(const std::string& path, const engine::LearnerStats& s, double elapsed);
  void start_serving();
  void open_control();
  void start_dashboard();  // dashboard.listen: the server, its URL printed and in dashboard.address
  void log_tick(double now);
  // cfg_ with its schedules applied at `frames`: the control loop's fields now.
  engine::ExperimentConfig live_config(int64_t frames) const;
  // Sets stop_reason_ when the learner failed or a stop rule is met.
  void check_stop_rules(const engine::LearnerStats& s, const engine::ExperimentConfig& live);
  // Hung actors, parked local slots (and the stop when all are parked).
  void watch_actors(const engine::ExperimentConfig& live, double elapsed, int connected);
  // Once per run, when recording has turned off (s.record->error): the one
  // message that says so, and the metrics.jsonl "record_off" row at `time_s`.
  void report_record_off(const engine::LearnerStats& s, double time_s);
  // stop.final_eval_episodes (cli/engine/run_finish.cc): after the final checkpoint of a run
  // that stopped by its own rule, the final weights play that many episodes; the result
  // goes into final_eval_ (the stop row, the summary). Fails alone: a line, no exit code.
  void evaluate_final_policy();
  void print_summary(const engine::LearnerStats& s, double elapsed_s) const;
  double elapsed_s() const;

  const RunOptions options_;
  std::string loaded_from_;  // the script, or RUN_DIR/config.lua on --resume
  std::string auth_token_;  // actors must present it ("" = none)
  std::vector<scripts::ScriptSource> sources_;
  engine::ExperimentConfig cfg_;  // replaced by hot reload and `set`
  envs::EnvSpec env_spec_;        // the loader's description of the env, for the learner
  std::optional<engine::RunDirectory> dir_;

  // Declared in the order setup() makes them; ~Run() takes them down in reverse.
  std::unique_ptr<SignalWaiter> signals_;
  std::unique_ptr<LocalRanks> local_ranks_;      // rank 0 of a group on this host: ranks 1..N-1
  std::unique_ptr<engine::C10dGroup> group_;     // topology.learners > 1
  std::unique_ptr<SealedValues> values_;         // the group's store, values signed with the token
  std::unique_ptr<engine::Learner> learner_;
  std::unique_ptr<TensorboardSink> tensorboard_;  // log.tensorboard: metrics_ hands it every row
  std::unique_ptr<engine::MetricsLog> metrics_;
  std::unique_ptr<rpc::Server> server_;
  std::unique_ptr<LocalActors> actors_;
  std::unique_ptr<HotReload> reload_;
  std::unique_ptr<Progress> progress_;
  std::unique_ptr<rpc::ControlServer> control_;
  std::unique_ptr<RunControl> run_control_;
  std::unique_ptr<BestCheckpoint> best_;
  std::unique_ptr<dashboard::Server> dashboard_;  // reads RUN_DIR's files; the control loop hands it the status

  // The control loop's clock: steady seconds.
  double t0_ = 0;            // when the run started, earlier by the elapsed time of a resumed one
  double next_tick_ = 0;     // the next metrics row
  double next_watch_ = 0;    // the next look at the script's files
  double next_checkpoint_ = 0;
  double last_tick_ = 0;     // time and frames of the last row, for its frame rate
  int64_t last_frames_ = 0;
  uint64_t seen_version_ = 0;  // the config version the loop's own fields follow
  int failed_checkpoints_ = 0;  // periodic checkpoints failed in a row (a full disk...)
  bool actors_failed_ = false;  // every local actor was parked: the run stops and exits 1
  bool record_off_reported_ = false;
  bool diverged_ = false;       // the learner failed (the model went non-finite): no final checkpoint, exit 1
  bool group_failed_ = false;   // a rank of the group died, hung or drifted: exit 3
  std::string host_;            // this host's name, in the group's reports
  int run_lock_fd_ = -1;  // dir_'s lock (flock), held until the process ends
  int64_t reports_published_ = 0;  // this rank's reports to its group, their seq
  std::string actor_address_;      // a rank of a group: where it takes actors, as others reach it
  std::shared_ptr<ActorPlacement> placement_;  // a rank of a group: where actors with --any-rank go (shared with the io threads)
  GroupStatus group_status_;    // rank 0 of a group: the group as `status` shows it
  std::string stop_reason_;    // set to stop; RunControl sets it on `stop`
  bool signaled_ = false;      // the stop was SIGINT or SIGTERM: a user who wants out, no final evaluation
  std::optional<engine::Evaluation> final_eval_;  // stop.final_eval_episodes played
  std::string final_eval_policy_;  // how it acted: "sampled", "greedy", "epsilon 0.001"
};

}  // namespace moonseed::cli
