// What a run's control socket (rpc/control_socket.h) can do: the commands of
// `moonseed ctl`, `moonseed attach` and the REPL's run handles, executed on
// the run's control thread between two ticks.
//
//   help                       the commands
//   status                     counters, return, config version, paused, the
//                              actors (at most 256, by id) with their rates, and the
//                              local actor slots (running, backing off, parked; their
//                              deaths and the last one's cause); on rank 0
//                              of a learner group the group's counters and fps, and
//                              "ranks": each rank's numbers and the age of its report
//   get [FIELD]                a field's value (all fields without one)
//   set FIELD VALUE            like `FIELD=VALUE` on the command line (VALUE plain or a
//                              Lua expression, scripts/loader/config_overrides.h), applied as a
//                              hot reload: validated, restart-only fields and fields of
//                              the other algorithm refused (cli/engine/hot_reload.h)
//   reload                     load the script again now
//   pause | resume             stop / restart training (acting stops by backpressure)
//   checkpoint                 save a checkpoint now (it can become best.pt); replies its path
//   evaluate [N] [greedy|sample]  play N episodes (default 10, greedy) with the newest weights
//   stop                       end the run as stop conditions do (final checkpoint, Bye)
//
// Replies are JSON objects: {"ok": true, "result": ...} or {"ok": false, "error": "..."}.
// Not thread-safe: the control loop owns it.
#pragma once

#include <functional>
#include <string>

#include "cli/engine/actor_rates.h"
#include "cli/engine/hot_reload.h"
#include "cli/engine/learner_group.h"
#include "cli/engine/local_actors.h"
#include "cli/engine/progress.h"
#include "engine/config/experiment_config.h"
#include "engine/learner/learner.h"
#include "engine/run/run_directory.h"

namespace moonseed::cli {

struct RunContext {
  engine::Learner& learner;
  engine::ExperimentConfig& cfg;
  HotReload& reload;
  const engine::RunDirectory& dir;
  Progress& progress;
  std::function<double()> elapsed_s;
  std::string& stop_reason;  // set to end the run
  // Saves a checkpoint now, prunes, and offers it for best.pt as the periodic ones are
  // (Run::checkpoint); returns its path. Throws what saving throws.
  std::function<std::string()> checkpoint;
  // Of a learner group (0 otherwise): config changes go to rank 0, which hands them to every rank.
  int rank = 0;
  // Rank 0 of a group: the group as of the last log tick, which `status` shows
  // (the group's counters, and each rank); null otherwise.
  const GroupStatus* group = nullptr;
};

class RunControl {
 public:
  explicit RunControl(RunContext context) : c_(context) {}

  // The run's local actors, for `status` (borrowed; null: none listed).
  void set_local_actors(const LocalActors* actors) { local_actors_ = actors; }

  // One request line -> one reply (JSON, no newline). Never throws.
  std::string handle(const std::string& request);

  // At each log tick, before the status goes to the dashboard: the actors'
  // frames now, from which `status` gives each its rate over the last interval.
  void sample_actors();

 private:
  std::string dispatch(const std::string& command, const std::string& args);
  std::string status();
  std::string get(const std::string& path);
  std::string checkpoint();
  std::string evaluate(const std::string& args);
  std::string reloaded(const HotReload::Outcome& outcome);

  RunContext c_;
  ActorRates rates_;
  const LocalActors* local_actors_ = nullptr;
};

// JSON replies of the control protocol.
std::string control_ok(const std::string& result_json);
std::string control_error(const std::string& message);

}  // namespace moonseed::cli
