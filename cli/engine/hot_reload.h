// Hot reload for `moonseed run` (docs/experiments-design.md): watches the files
// the experiment was loaded from and, when one is saved, loads the script again
// with the same overrides and applies what may change while the run trains.
//
//   - a script that fails to load or validate changes nothing; the error is shown;
//   - a change to any restart-only field refuses the whole reload, naming the fields;
//   - so does a change to a field of another algorithm's section (vtrace.* on
//     an R2D2 run, r2d2.* on a V-trace run), naming the field and the run's
//     algo: the run would not use it. reload() with such an extra override
//     (`moonseed ctl set`, run:set in the console) is refused the same way,
//     even when the value equals the running one;
//   - otherwise the config version goes up, the learner takes the hot fields at
//     its next training step (Learner::set_hot_config, which also tells the
//     actors), the caller's config is replaced (stop, log and checkpoint fields
//     take effect at the control loop's next tick), config.lua in the run
//     directory is rewritten, and the diff is printed.
// Every outcome but "nothing changed" is a row in metrics.jsonl: "event" =
// "reload", "reload_refused" or "reload_failed"; a reload that finds the
// running config again after a refused or failed one prints "exp.lua loads
// again; config unchanged" and writes "reload_restored".
//
// A saved file is loaded on a thread of its own: the control loop goes on
// answering signals and `moonseed ctl` while user Lua runs (within the
// loader's time and memory limits, docs/security.md), and applies the result
// at a later poll(). reload() (from `moonseed ctl set`) loads in the caller.
//
// Not thread-safe: the control loop owns it.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "cli/engine/progress.h"
#include "engine/config/experiment_config.h"
#include "engine/learner/learner.h"
#include "engine/run/metrics_log.h"
#include "engine/run/run_directory.h"
#include "scripts/loader/experiment_loader.h"
#include "scripts/loader/source_watcher.h"

namespace moonseed::cli {

// "" or why `path` means nothing to a run of `algo`: it lies in the section of
// another registered algorithm ("vtrace.entropy_cost is a field of algo
// "vtrace", and this run's algo is "r2d2", which does not use it").
std::string other_algorithm_field(const std::string& algo, const std::string& path);

// The files hot reload watches: every source on disk (not the embedded library).
std::vector<std::string> watched_files(const std::vector<scripts::ScriptSource>& sources);

class HotReload {
 public:
  // `script` is what the run was loaded from (for --resume: RUN_DIR/config.lua,
  // which poll() itself rewrites; those writes are not taken for user edits).
  HotReload(std::string script, std::vector<std::string> overrides, std::vector<std::string> sources,
            engine::Learner& learner, const engine::RunDirectory& dir, engine::MetricsLog& metrics);

  struct Outcome {
    enum class Kind { kApplied, kUnchanged, kRefused, kFailed };
    Kind kind = Kind::kUnchanged;
    std::string message;  // what was printed ("reload #2 applied: ...", the error...)
    std::string json;     // the metrics.jsonl event row's fields, as a JSON object
  };

  ~HotReload();  // waits for a load in progress (bounded by the loader's time limit)
  HotReload(const HotReload&) = delete;
  HotReload& operator=(const HotReload&) = delete;

  // Checks the sources; on a change starts loading them on a thread. Once a
  // load has finished, applies or refuses it as above. Never waits for user
  // Lua. Returns true when `cfg` was replaced by the reloaded config.
  bool poll(engine::ExperimentConfig& cfg, double elapsed_s, Progress& progress);

  // Loads the script now, with the run's overrides plus `extra` ("path=value",
  // as on the command line), and applies or refuses as above. Applied extra
  // overrides stay: later reloads keep them, as they keep the command line's.
  // `origin` says who asked ("file", "control") in the printed line and the event row.
  Outcome reload(engine::ExperimentConfig& cfg, double elapsed_s, Progress& progress,
                 const std::vector<std::string>& extra = {}, const std::string& origin = "file");

  uint64_t config_version() const { return version_; }

 private:
  // A script loaded with some overrides, or why it could not be.
  struct Loaded {
    std::optional<scripts::LoadedExperiment> experiment;
    std::string error;
  };
  // A load on its own thread; `done` is set last.
  struct Pending {
    std::vector<std::string> overrides;
    Loaded loaded;
    std::atomic<bool> done{false};
    std::thread thread;
  };
  static Loaded load(const std::string& script, const std::vector<std::string>& overrides);
  void start_load();  // loads the script with overrides_ on a thread (pending_)
  Outcome apply(engine::ExperimentConfig& cfg, double elapsed_s, Progress& progress,
                const std::vector<std::string>& overrides, Loaded loaded, const std::string& origin);
  // Prints and records a refusal for `reason`; the run keeps its config.
  Outcome refuse(double elapsed_s, Progress& progress, const std::string& origin, const std::string& reason,
                 const std::vector<std::string>& fields, const std::string& changes_json);
  // Writes `event` as a metrics.jsonl row (with time_s first) and as `out.json`: one text for both.
  Outcome record(Outcome out, double elapsed_s, const engine::MetricsRow& event);

  std::string script_;
  std::vector<std::string> overrides_;
  engine::Learner& learner_;
  const engine::RunDirectory& dir_;
  engine::MetricsLog& metrics_;
  scripts::SourceWatcher watcher_;
  uint64_t version_ = 0;
  bool broken_ = false;  // the last reload was refused or failed
  std::unique_ptr<Pending> pending_;  // a saved file being loaded
};

}  // namespace moonseed::cli
