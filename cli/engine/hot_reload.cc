#include "cli/engine/hot_reload.h"

#include <algorithm>
#include <chrono>
#include <iostream>

#include "base/log.h"
#include "base/text.h"
#include "engine/config/diff.h"
#include "engine/learner/algorithms.h"
#include "scripts/loader/experiment_loader.h"

namespace moonseed::cli {
namespace {

std::string json_list(const std::vector<std::string>& items) {
  std::string list = "[";
  for (size_t k = 0; k < items.size(); ++k) list += (k ? ", " : "") + base::json_quote(items[k]);
  return list + "]";
}

// "optimizer.lr=3e-4" -> "optimizer.lr"
std::string override_path(const std::string& o) { return o.substr(0, o.find('=')); }

}  // namespace

std::string other_algorithm_field(const std::string& algo, const std::string& path) {
  const size_t dot = path.find('.');
  if (dot == std::string::npos) return "";
  const std::string section = path.substr(0, dot);
  if (section == algo) return "";
  const std::vector<std::string> algos = engine::registered_algorithms();
  if (std::find(algos.begin(), algos.end(), section) == algos.end()) return "";
  return path + " is a field of algo \"" + section + "\", and this run's algo is \"" + algo +
         "\", which does not use it";
}

std::vector<std::string> watched_files(const std::vector<scripts::ScriptSource>& sources) {
  std::vector<std::string> out;
  for (const scripts::ScriptSource& s : sources) {
    if (!s.embedded) out.push_back(s.path);
  }
  return out;
}

HotReload::HotReload(std::string script, std::vector<std::string> overrides,
                     std::vector<std::string> sources, engine::Learner& learner,
                     const engine::RunDirectory& dir, engine::MetricsLog& metrics)
    : script_(std::move(script)),
      overrides_(std::move(overrides)),
      learner_(learner),
      dir_(dir),
      metrics_(metrics),
      watcher_(std::move(sources)) {}

HotReload::Outcome HotReload::record(Outcome out, double elapsed_s, const engine::MetricsRow& event) {
  out.json = event.to_json();  // what `ctl reload` replies: the row without its time
  engine::MetricsRow row;
  row.add("time_s", elapsed_s);
  for (const auto& [key, value] : event.fields()) row.add_json(key, value);
  metrics_.append(row);  // a row it cannot write, MetricsLog reports (once per outage)
  return out;
}

HotReload::~HotReload() {
  if (!pending_ || !pending_->thread.joinable()) return;
  // The loader's limits end user Lua within 5 s; one C call (a pathological
  // string.find) is not interrupted by them, and must not hold the exit.
  for (int i = 0; i < 70 && !pending_->done.load(std::memory_order_acquire); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (pending_->done.load(std::memory_order_acquire)) {
    pending_->thread.join();
  } else {
    base::log_warning("a reloaded script is still running at exit; leaving it");
    pending_->thread.detach();
    pending_.release();  // the detached thread still writes into it
  }
}

HotReload::Loaded HotReload::load(const std::string& script, const std::vector<std::string>& overrides) {
  Loaded out;
  try {
    out.experiment = scripts::load_experiment_sources(script, overrides);
  } catch (const std::exception& e) {
    out.error = e.what();
  }
  return out;
}

bool HotReload::poll(engine::ExperimentConfig& cfg, double elapsed_s, Progress& progress) {
  if (pending_) {
    if (!pending_->done.load(std::memory_order_acquire)) return false;  // user Lua still runs
    pending_->thread.join();
    std::unique_ptr<Pending> finished = std::move(pending_);
    if (finished->overrides != overrides_) {
      // `moonseed ctl set` changed the overrides meanwhile: load again with them.
      start_load();
      return false;
    }
    return apply(cfg, elapsed_s, progress, finished->overrides, std::move(finished->loaded), "file").kind ==
           Outcome::Kind::kApplied;
  }
  if (watcher_.poll()) start_load();
  return false;
}

void HotReload::start_load() {
  pending_ = std::make_unique<Pending>();
  pending_->overrides = overrides_;
  Pending* p = pending_.get();
  p->thread = std::thread([p, script = script_] {
    p->loaded = load(script, p->overrides);
    p->done.store(true, std::memory_order_release);
  });
}

HotReload::Outcome HotReload::reload(engine::ExperimentConfig& cfg, double elapsed_s, Progress& progress,
                                     const std::vector<std::string>& extra, const std::string& origin) {
  for (const std::string& e : extra) {
    const std::string problem = other_algorithm_field(cfg.algo, override_path(e));
    if (!problem.empty()) return refuse(elapsed_s, progress, origin, problem, {override_path(e)}, "{}");
  }
  std::vector<std::string> overrides = overrides_;
  for (const std::string& e : extra) {
    // A later value for the same field replaces the earlier one.
    const std::string path = override_path(e);
    overrides.erase(std::remove_if(overrides.begin(), overrides.end(),
                                   [&](const std::string& o) { return override_path(o) == path; }),
                    overrides.end());
    overrides.push_back(e);
  }
  return apply(cfg, elapsed_s, progress, overrides, load(script_, overrides), origin);
}

HotReload::Outcome HotReload::apply(engine::ExperimentConfig& cfg, double elapsed_s, Progress& progress,
                                    const std::vector<std::string>& overrides, Loaded result,
                                    const std::string& origin) {
  Outcome out;
  const std::string by = origin == "file" ? "" : " (" + origin + ")";
  if (!result.experiment) {
    out.kind = Outcome::Kind::kFailed;
    out.message = std::string("reload failed") + by + ", nothing changed:\n" + result.error;
    progress.finish();
    std::cerr << "moonseed: " << out.message << "\n";
    broken_ = true;
    return record(std::move(out), elapsed_s,
                  engine::MetricsRow().add("event", "reload_failed").add("origin", origin).add("error", result.error));
  }
  const scripts::LoadedExperiment& reloaded = *result.experiment;
  const engine::ExperimentConfig& loaded = reloaded.config;
  const engine::ConfigDiff diff = engine::diff_configs(cfg, loaded);
  if (diff.empty()) {
    // Saved without a change that matters; an extra override that equals the
    // running value is kept all the same.
    overrides_ = overrides;
    if (broken_) {
      // The last attempt was refused or failed; the user fixed or restored the file.
      broken_ = false;
      out.message = script_ + " loads again; config unchanged";
      progress.finish();
      std::cerr << "moonseed: " << out.message << "\n";
      return record(std::move(out), elapsed_s,
                    engine::MetricsRow().add("event", "reload_restored").add("origin", origin).add(
                        "config_version", static_cast<double>(version_)));
    }
    out.message = "nothing changed";
    // Not an event of the run: the reply to `ctl reload` only, no metrics row.
    out.json = engine::MetricsRow()
                   .add("event", "reload_unchanged")
                   .add("config_version", static_cast<double>(version_))
                   .to_json();
    return out;
  }
  // A changed field of another algorithm's section would change nothing the run does, restarted or
  // not (a changed algo itself is restart-only, below).
  for (const engine::FieldChange& c : diff.changes) {
    const std::string problem = loaded.algo == cfg.algo ? other_algorithm_field(cfg.algo, c.path) : "";
    if (!problem.empty()) return refuse(elapsed_s, progress, origin, problem, {c.path}, diff.to_json());
  }
  const std::vector<std::string> refused = diff.refused();
  if (!refused.empty()) {
    std::string fields;
    for (const engine::FieldChange& c : diff.changes) {
      if (c.reload != engine::ReloadClass::kRestart) continue;
      fields += (fields.empty() ? "" : ", ") + c.path + " (" + c.before + " -> " + c.after + ")";
    }
    return refuse(elapsed_s, progress, origin,
                  std::string("restart-only field") + (refused.size() > 1 ? "s" : "") + " changed: " + fields +
                      ". Restart the run (or --resume with key=value) to change " +
                      (refused.size() > 1 ? "them" : "it") + ".",
                  refused, diff.to_json());
  }
  ++version_;
  broken_ = false;
  learner_.set_hot_config(loaded, version_);
  cfg = loaded;
  overrides_ = overrides;
  try {
    dir_.write_file_atomic("config.lua", scripts::to_lua(cfg));
  } catch (const std::exception& e) {
    std::cerr << "moonseed: cannot rewrite config.lua: " << e.what() << "\n";
  }
  // The script may load other files now; our own write of config.lua is not a user's edit.
  watcher_.reset(watched_files(reloaded.sources));
  out.kind = Outcome::Kind::kApplied;
  out.message = "reload #" + std::to_string(version_) + " applied" + by + ": " + diff.summary();
  progress.finish();
  std::cerr << "moonseed: " << out.message << "\n";
  return record(std::move(out), elapsed_s,
                engine::MetricsRow().add("event", "reload").add("origin", origin).add(
                    "config_version", static_cast<double>(version_)).add_json("changes", diff.to_json()));
}

HotReload::Outcome HotReload::refuse(double elapsed_s, Progress& progress, const std::string& origin,
                                     const std::string& reason, const std::vector<std::string>& fields,
                                     const std::string& changes_json) {
  Outcome out;
  out.kind = Outcome::Kind::kRefused;
  out.message = "reload refused" + std::string(origin == "file" ? "" : " (" + origin + ")") +
                ", nothing changed: " + reason;
  progress.finish();
  std::cerr << "moonseed: " << out.message << "\n";
  broken_ = true;
  return record(std::move(out), elapsed_s,
                engine::MetricsRow().add("event", "reload_refused").add("origin", origin).add_json(
                    "fields", json_list(fields)).add_json("changes", changes_json));
}

}  // namespace moonseed::cli
