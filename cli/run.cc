#include "cli/run.h"

#include <poll.h>
#include <sys/stat.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <iostream>
#include <stdexcept>

#include "base/log.h"
#include "cli/auth_token.h"
#include "cli/commands.h"
#include "cli/hot_reload.h"
#include "cli/local_actors.h"
#include "cli/progress.h"
#include "cli/run_control.h"
#include "cli/run_report.h"
#include "engine/config/schedule.h"
#include "engine/learner/learner.h"
#include "rpc/address.h"
#include "rpc/control_socket.h"
#include "rpc/server.h"

namespace moonseed::cli {

// SIGINT/SIGTERM arrive on a file descriptor so the control loop can wait for
// "next tick or a signal" in one poll().
class SignalWaiter {
 public:
  SignalWaiter() {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    // Blocked before any thread starts, so every thread inherits the mask.
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    fd_ = signalfd(-1, &set, SFD_CLOEXEC);
    if (fd_ < 0) throw std::runtime_error("signalfd failed");
  }
  ~SignalWaiter() { ::close(fd_); }
  SignalWaiter(const SignalWaiter&) = delete;
  SignalWaiter& operator=(const SignalWaiter&) = delete;
  // Waits up to `seconds`, serving the control socket meanwhile; returns the
  // signal number, or 0 on timeout or after serving a request.
  int wait(double seconds, rpc::ControlServer& control, const rpc::ControlServer::Handler& handle) {
    std::vector<pollfd> fds = {pollfd{fd_, POLLIN, 0}};
    control.add_poll_fds(fds);
    int ms = static_cast<int>(std::max(0.0, seconds) * 1000);
    if (::poll(fds.data(), fds.size(), ms) <= 0) return 0;
    control.serve(fds, handle);
    if (!(fds[0].revents & POLLIN)) return 0;
    signalfd_siginfo info{};
    if (::read(fd_, &info, sizeof info) != sizeof info) return 0;
    return static_cast<int>(info.ssi_signo);
  }

 private:
  int fd_;
};

namespace {

constexpr double kWatchPeriod = 0.25;  // seconds between looks at the script's files

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Unix socket paths are limited to 107 bytes; deep run directories fall back to /tmp.
std::string listen_address(const engine::ExperimentConfig& cfg, const engine::RunDirectory& dir) {
  if (!cfg.topology.listen.empty()) return cfg.topology.listen;
  if (cfg.topology.transport == "tcp") return "tcp:127.0.0.1:0";
  std::string path = dir.path() + "/learner.sock";
  if (path.size() > 100) path = "/tmp/moonseed-" + std::to_string(::getpid()) + ".sock";
  return "unix:" + path;
}

// Debian's LibTorch does its matrix products through libblas.so.3, which is
// the ~25x slower reference BLAS unless an optimised one provides it.
void warn_if_reference_blas() {
  char resolved[PATH_MAX];
  if (!::realpath("/usr/lib/x86_64-linux-gnu/libblas.so.3", resolved)) return;
  if (std::string(resolved).find("/blas/libblas") != std::string::npos) {
    std::cerr << "moonseed: warning: libblas.so.3 is the reference BLAS (" << resolved
              << "); LibTorch runs ~25x slower on it. Install libopenblas0-openmp (bash .ci/setup does).\n";
  }
}

// RUN_DIR/sources/: a copy of every Lua file the experiment was loaded from
// (the script, recipes, modules; the engine's own library too), SHA256SUMS
// over the copies (`cd sources && sha256sum -c SHA256SUMS`), and ORIGINS
// saying where each copy came from. With config.lua, enough to see exactly
// what a run was made of.
void save_sources(const engine::RunDirectory& dir, const std::vector<scripts::ScriptSource>& sources) {
  std::filesystem::create_directories(dir.path() + "/sources");
  std::vector<scripts::ScriptSource> copies;
  std::string origins;
  for (size_t i = 0; i < sources.size(); ++i) {
    scripts::ScriptSource copy = sources[i];
    char prefix[24];
    std::snprintf(prefix, sizeof prefix, "%02zu-", i);
    copy.path = prefix + std::filesystem::path(sources[i].path).filename().string();
    dir.write_file_atomic("sources/" + copy.path, copy.text);
    origins += copy.path + "\t" + sources[i].path + (sources[i].embedded ? "\t(embedded in moonseed)" : "") + "\n";
    copies.push_back(std::move(copy));
  }
  dir.write_file_atomic("sources/SHA256SUMS", scripts::sources_manifest(copies));
  dir.write_file_atomic("sources/ORIGINS", origins);
}

// Writes RUN_DIR/name for whoever looks for it later, or says what missing it
// costs: a full disk at --resume must not stop a run (docs/reliability.md).
void write_or_warn(const engine::RunDirectory& dir, const std::string& name, const std::string& text,
                   const std::string& cost) {
  try {
    dir.write_file_atomic(name, text);
  } catch (const std::exception& e) {
    base::log_warning(std::string(e.what()) + "; training goes on, but " + cost);
  }
}

// Where record.dir points: RUN_DIR/experience when empty, relative paths from the run directory.
std::string experience_directory(const engine::RecordConfig& record, const std::string& run_dir) {
  if (record.dir.empty()) return run_dir + "/experience";
  if (record.dir[0] == '/') return record.dir;
  return run_dir + "/" + record.dir;
}

// config.warm_start before the actors start, with a progress line; the report
// goes into metrics.jsonl as a "warm_start" event. What is printed follows the
// report (training steps, or a replay filled), not the algorithm's name.
void warm_start(engine::Learner& learner, const engine::ExperimentConfig& cfg, engine::MetricsLog& metrics) {
  const auto start = std::chrono::steady_clock::now();
  auto last_print = start;
  bool announced = false;
  const auto announce = [&](const engine::WarmStartReport& r) {
    announced = true;
    std::cerr << "moonseed: warm start from " << cfg.warm_start.log
              << (r.steps_planned > 0 ? " (" + std::to_string(r.steps_planned) + " training steps on its unrolls)"
                                      : std::string(" (pre-filling the replay)"))
              << "\n";
  };
  const engine::WarmStartReport report = learner.warm_start([&](const engine::WarmStartReport& r) {
    if (!announced) announce(r);  // the agents' first report, before any work
    const auto now = std::chrono::steady_clock::now();
    if (now - last_print < std::chrono::milliseconds(500)) return;
    last_print = now;
    if (r.steps_planned > 0) {
      std::cerr << "\rmoonseed: warm start: step " << r.steps << "/" << r.steps_planned << ", loss "
                << format_number(r.loss_last) << ", bc " << format_number(r.bc_last) << "   " << std::flush;
    } else {
      std::cerr << "\rmoonseed: warm start: " << r.unrolls << " unrolls read, " << r.sequences
                << " sequences in the replay   " << std::flush;
    }
  });
  if (!announced) announce(report);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (report.steps_planned > 0) {
    std::cerr << "\rmoonseed: warm start: " << report.steps << " steps on " << report.unrolls << " unrolls in "
              << format_number(seconds) << " s; loss " << format_number(report.loss_first) << " -> "
              << format_number(report.loss_last) << ", bc " << format_number(report.bc_first) << " -> "
              << format_number(report.bc_last) << "\n";
  } else {
    std::cerr << "\rmoonseed: warm start: " << report.sequences << " sequences in the replay from "
              << report.unrolls << " unrolls in " << format_number(seconds) << " s\n";
  }
  engine::MetricsRow event;
  event.add("time_s", 0.0).add("event", "warm_start").add("log", cfg.warm_start.log)
      .add("warm_start_steps", report.steps).add("warm_start_unrolls", report.unrolls)
      .add("warm_start_sequences", report.sequences).add("warm_start_seconds", seconds)
      .add("warm_start_loss_first", report.loss_first).add("warm_start_loss_last", report.loss_last)
      .add("warm_start_bc_first", report.bc_first).add("warm_start_bc_last", report.bc_last);
  metrics.append(event);
}

// One metrics.jsonl row of the run's counters (docs/config.md "Run directory").
engine::MetricsRow counters_row(const engine::LearnerStats& s, const engine::ExperimentConfig& cfg, double elapsed,
                                double fps, int actor_restarts) {
  engine::MetricsRow row;
  row.add("time_s", elapsed).add("fps", fps);
  add_counters(row, s, cfg.topology.eval_envs_per_actor > 0);
  // The version the training thread has applied: the rows' numbers are its.
  row.add("actor_restarts", actor_restarts).add("config_version", static_cast<double>(s.applied_config_version));
  return row;
}

}  // namespace

Run::Run(RunOptions options) : options_(std::move(options)) {}

Run::~Run() {
  // In reverse of setup(), except that the learner's threads (which may pump
  // the server's sockets) stop before the server is destroyed.
  run_control_.reset();
  control_.reset();
  progress_.reset();
  reload_.reset();
  actors_.reset();
  if (learner_) learner_->stop();
}

double Run::elapsed_s() const { return now_s() - t0_; }

void Run::setup() {
  // Output piped into a reader that goes away (head, a closed ssh session)
  // must not kill the run before its final checkpoint: writes fail instead.
  ::signal(SIGPIPE, SIG_IGN);
  open_run_directory();
  warn_if_reference_blas();
  signals_ = std::make_unique<SignalWaiter>();
  const engine::Counters start = start_learner();
  // A resumed run's clock goes on from its checkpoint's training time; it
  // runs before the actors start, so their joins come after the resume row.
  t0_ = now_s() - start.elapsed_s;
  start_serving();
  reload_ = std::make_unique<HotReload>(loaded_from_, options_.overrides, watched_files(sources_), *learner_, *dir_,
                                        *metrics_);
  next_watch_ = now_s() + kWatchPeriod;
  progress_ = std::make_unique<Progress>(!options_.quiet && cfg_.log.progress);
  last_frames_ = start.frames;
  open_control();
  next_tick_ = now_s() + cfg_.log.interval_s;
  next_checkpoint_ = cfg_.checkpoint.interval_s > 0 ? now_s() + cfg_.checkpoint.interval_s : 1e300;
  last_tick_ = now_s();
}

void Run::open_run_directory() {
  loaded_from_ = options_.resume_dir.empty() ? options_.script : options_.resume_dir + "/config.lua";
  if (!options_.resume_dir.empty()) dir_ = engine::RunDirectory::open(options_.resume_dir);
  scripts::LoadedExperiment loaded = scripts::load_experiment_sources(loaded_from_, options_.overrides);
  cfg_ = loaded.config;
  sources_ = std::move(loaded.sources);
  protect();
  if (!dir_) {
    dir_ = engine::RunDirectory::create(cfg_.runs_dir, cfg_.name);
    save_sources(*dir_, sources_);
  }
  if (options_.resume_dir.empty()) {
    dir_->write_file_atomic("config.lua", scripts::to_lua(cfg_));
  } else {
    write_or_warn(*dir_, "config.lua", scripts::to_lua(cfg_),
                  "config.lua keeps the config from before, without this resume's overrides");
  }
}

// Before anything is written or served: the run's files are private (or the
// group's), and a learner reachable from other hosts has a token.
void Run::protect() {
  ::umask(cfg_.group_access ? 027 : 077);
  auth_token_ = auth_token(options_.auth_token_file);
  // Local actors read it from the environment they inherit.
  if (!options_.auth_token_file.empty()) ::setenv(kAuthTokenVariable, auth_token_.c_str(), 1);
  if (cfg_.topology.listen.empty()) return;
  if (rpc::only_this_host(rpc::require_address(cfg_.topology.listen))) return;
  if (auth_token_.empty() && !options_.insecure) {
    throw std::invalid_argument("topology.listen = \"" + cfg_.topology.listen +
                                "\" can be reached from other hosts, and without an auth token anyone who "
                                "reaches it can join as an actor and feed the learner's training; give "
                                "--auth-token-file FILE (or set MOONSEED_AUTH_TOKEN), or pass --insecure");
  }
  if (auth_token_.empty()) {
    base::log_warning("listening on " + cfg_.topology.listen + " without an auth token (--insecure)");
  }
}

// The learner, restored on --resume or warm-started, recording if asked.
engine::Counters Run::start_learner() {
  learner_ = std::make_unique<engine::Learner>(cfg_, dir_->run_id());
  if (!auth_token_.empty()) learner_->set_auth_token(auth_token_);
  metrics_ = std::make_unique<engine::MetricsLog>(dir_->metrics_path());
  engine::Counters start;
  if (!options_.resume_dir.empty()) start = resume();
  if (!cfg_.warm_start.log.empty() && options_.resume_dir.empty()) warm_start(*learner_, cfg_, *metrics_);
  if (cfg_.record.enabled) {
    const std::string record_dir = experience_directory(cfg_.record, dir_->path());
    learner_->record_to(record_dir);
    const engine::LearnerStats s = learner_->stats();
    if (s.record->error.empty()) std::cerr << "moonseed: recording experience to " << record_dir << "\n";
    report_record_off(s, start.elapsed_s);  // a log that cannot be opened (a disk still full on --resume)
  }
  return start;
}

// --resume: the newest complete checkpoint, after what interrupted saves left;
// a "resume" row in metrics.jsonl says from where, with the restored counters.
engine::Counters Run::resume() {
  const std::vector<std::string> removed = dir_->remove_unfinished_checkpoint_files();
  if (!removed.empty()) {
    std::string names;
    for (const std::string& name : removed) names += (names.empty() ? "" : ", ") + name;
    std::cerr << "moonseed: removed " << removed.size() << " file(s) of interrupted checkpoints: " << names << "\n";
  }
  const std::vector<std::string> companions = learner_->checkpoint_companions();
  const std::vector<std::string> all = dir_->checkpoints();
  std::string ckpt = dir_->newest_checkpoint(companions);
  // Newer ones lack a companion: a kill between the files of a checkpoint of
  // a build that wrote the model file first.
  for (auto it = all.rbegin(); !ckpt.empty() && it != all.rend() && *it != ckpt; ++it) {
    std::string missing;
    for (const std::string& suffix : companions) {
      if (!std::filesystem::exists(*it + suffix)) missing += (missing.empty() ? "" : ", ") + *it + suffix;
    }
    std::cerr << "moonseed: skipping incomplete checkpoint " << *it << " (no " << missing
              << ": its save was interrupted)\n";
  }
  // None complete: the newest, with what it has (the algorithm says what it lacks).
  if (ckpt.empty() && !all.empty()) ckpt = all.back();
  if (ckpt.empty()) throw std::runtime_error(dir_->path() + " has no checkpoint to resume from");
  const engine::Counters start = learner_->restore(ckpt);
  std::cerr << "moonseed: resumed " << ckpt << " (" << start.frames << " frames, " << start.optimizer_steps
            << " steps)\n";
  engine::MetricsRow event;
  event.add("time_s", start.elapsed_s).add("event", "resume")
      .add("checkpoint", std::filesystem::path(ckpt).lexically_relative(dir_->path()).string())
      .add("optimizer_steps", start.optimizer_steps).add("frames", start.frames).add("episodes", start.episodes)
      .add("trained_frames", start.trained_frames);
  if (cfg_.topology.eval_envs_per_actor > 0) event.add("eval_episodes", start.eval_episodes);
  // The algorithm's numbers as restored (R2D2: replay_size).
  for (const engine::Metric& m : learner_->stats().agent_metrics) event.add(m.name, m.value);
  metrics_->append(event);
  return start;
}

// The rpc server and the learner's threads, then the local actors.
void Run::start_serving() {
  rpc::ServerOptions server_options;
  server_options.io_threads = cfg_.inference.io_threads;
  server_ = std::make_unique<rpc::Server>(learner_->actor_service(), server_options);
  if (cfg_.inference.io_threads == 0) {
    rpc::Server* server = server_.get();
    learner_->set_io_pump([server](std::chrono::nanoseconds max_wait) { server->run_for(max_wait); },
                          [server] { server->wake(); });
  }
  const std::string address = server_->listen(listen_address(cfg_, *dir_)).to_string();
  server_->start();
  learner_->start();
  // Remote actors (and tests) find the learner here.
  write_or_warn(*dir_, "learner.address", address + "\n", "remote actors must be given " + address + " themselves");

  LocalActorsOptions actor_options;
  actor_options.binary = actor_binary();
  actor_options.address = address;
  actor_options.count = cfg_.topology.local_actors < 0 ? cfg_.topology.actors
                                                       : std::min(cfg_.topology.local_actors, cfg_.topology.actors);
  actor_options.log_dir = dir_->path() + "/actors";
  // An actor that sent a step batch since it started did work: it is restarted at once when it dies.
  actor_options.step_batches = [learner = learner_.get()](int id) { return learner->actor_step_batches(id); };
  actors_ = std::make_unique<LocalActors>(actor_options);
  actors_->start();

  std::cerr << "moonseed: run " << dir_->path() << "\n"
            << "moonseed: " << cfg_.env.id << ", " << cfg_.topology.actors << " actors x "
            << cfg_.topology.envs_per_actor << " envs, learner on " << address << "\n";
}

// The control socket, control.address, --announce, and what serves requests.
void Run::open_control() {
  // `moonseed ctl` / `attach` find the socket through control.address (a deep
  // run directory puts it in /tmp, as the learner's socket).
  std::string control_path = dir_->path() + "/control.sock";
  if (control_path.size() > 100) control_path = "/tmp/moonseed-" + std::to_string(::getpid()) + "-control.sock";
  control_ = std::make_unique<rpc::ControlServer>(control_path);
  write_or_warn(*dir_, "control.address", "unix:" + control_path + "\n",
                "`moonseed ctl` cannot find this run through its directory");
  if (!options_.announce.empty()) {
    // Written after the control socket listens, so whoever reads it can connect.
    const std::string tmp = options_.announce + ".partial";
    if (std::FILE* f = std::fopen(tmp.c_str(), "w")) {
      std::fprintf(f, "%s\n", dir_->path().c_str());
      std::fclose(f);
      std::rename(tmp.c_str(), options_.announce.c_str());
    }
  }
  run_control_ = std::make_unique<RunControl>(
      RunContext{*learner_, cfg_, *reload_, *dir_, *progress_, [this] { return elapsed_s(); }, stop_reason_});
}

bool Run::tick() {
  const double wake_at = options_.watch ? std::min(next_tick_, next_watch_) : next_tick_;
  const double old_checkpoint_interval = cfg_.checkpoint.interval_s;
  const int sig = signals_->wait(wake_at - now_s(), *control_,
                                 [this](const std::string& line) { return run_control_->handle(line); });
  if (sig) {
    stop_reason_ = sig == SIGINT ? "interrupted (SIGINT)" : "terminated (SIGTERM)";
    return false;
  }
  if (!stop_reason_.empty()) return false;  // `stop` from the control socket
  double now = now_s();
  if (options_.watch && now >= next_watch_) {
    next_watch_ = now + kWatchPeriod;
    reload_->poll(cfg_, now - t0_, *progress_);
    now = now_s();
  }
  if (reload_->config_version() != seen_version_) {
    // A reload or a control `set` replaced cfg_: the control loop's own fields.
    seen_version_ = reload_->config_version();
    progress_->set_enabled(!options_.quiet && cfg_.log.progress);
    next_tick_ = std::min(next_tick_, now + cfg_.log.interval_s);
    if (cfg_.checkpoint.interval_s != old_checkpoint_interval) {
      next_checkpoint_ = cfg_.checkpoint.interval_s > 0 ? now + cfg_.checkpoint.interval_s : 1e300;
    }
  }
  // Actors that joined, left, hung, or reported something (a reward-shaping
  // function that failed, ...): the learner printed them; they go into
  // metrics.jsonl too.
  for (const engine::ActorEvent& e : learner_->take_actor_events()) {
    engine::MetricsRow event;
    event.add("time_s", e.at_s - t0_).add("event", engine::event_name(e.kind)).add("actor", e.actor_id);
    if (e.kind == engine::ActorEvent::Kind::kNotice) {
      event.add("notice", e.text);
    } else {
      event.add("host", e.host).add("pid", e.pid);
      if (!e.text.empty()) event.add("reason", e.text);
    }
    metrics_->append(event);
  }
  if (now >= next_tick_) log_tick(now);
  return stop_reason_.empty();
}

// The metrics row, the progress line, the stop rules and the periodic checkpoint.
void Run::log_tick(double now) {
  const engine::LearnerStats s = learner_->stats();
  // Scheduled control-loop fields (stop, log, checkpoint) at the current frame count.
  engine::ExperimentConfig live = cfg_;
  if (!live.schedules.empty()) engine::apply_schedules(live, static_cast<double>(s.frames));
  next_tick_ = now + std::max(0.05, live.log.interval_s);
  const double elapsed = now - t0_;
  const double fps = (s.frames - last_frames_) / std::max(1e-9, now - last_tick_);
  last_frames_ = s.frames;
  last_tick_ = now;

  watch_actors(live, elapsed, s.actors_connected);
  report_record_off(s, elapsed);
  // A row that cannot be written is dropped; MetricsLog says so once per outage.
  metrics_->append(counters_row(s, cfg_, elapsed, fps, actors_->restarts()));
  progress_->update(elapsed, s, fps, cfg_.topology.actors);

  if (stop_reason_.empty() && !s.failure.empty()) {
    diverged_ = true;
    stop_reason_ = s.failure;
  }
  if (stop_reason_.empty()) stop_reason_ = cli::stop_reason(live.stop, s, elapsed);
  if (stop_reason_.empty() && now >= next_checkpoint_) {
    const double interval = std::max(1.0, live.checkpoint.interval_s);
    next_checkpoint_ = now + interval;
    try {
      const std::string path = checkpoint(elapsed);
      if (failed_checkpoints_ > 0) {
        base::log_info("checkpoint " + path + " written after " + std::to_string(failed_checkpoints_) +
                       " failed attempt(s)");
      }
      failed_checkpoints_ = 0;
    } catch (const std::exception& e) {
      // The last good checkpoint stays (nothing is pruned for a failed one); the next interval tries again.
      ++failed_checkpoints_;
      const std::string newest = dir_->newest_checkpoint(learner_->checkpoint_companions());
      base::log_warning(std::string("checkpoint failed: ") + e.what() + "; training goes on, next try in " +
                        format_number(interval) + " s; " +
                        (newest.empty() ? std::string("no checkpoint yet") : "the last good checkpoint is " + newest));
      engine::MetricsRow event;
      event.add("time_s", elapsed).add("event", "checkpoint_failed").add("error", e.what());
      metrics_->append(event);
    }
  }
}

// Hung actors lose their slot (a local one is killed and restarted); parked
// local slots are reported, and when every one is parked and no actor is
// connected, the run stops: nothing would train any more.
void Run::watch_actors(const engine::ExperimentConfig& live, double elapsed, int connected) {
  for (int id : learner_->release_hung_actors(live.topology.actor_timeout_s)) actors_->kill(id);
  for (const LocalActors::Parked& parked : actors_->take_parked()) {
    engine::MetricsRow event;
    event.add("time_s", elapsed).add("event", "actor_parked").add("actor", parked.id).add("reason", parked.message);
    metrics_->append(event);
  }
  if (actors_->all_parked() && connected == 0 && stop_reason_.empty()) {
    actors_failed_ = true;
    stop_reason_ = "every local actor failed before its first step batch (see the messages above)";
  }
}

void Run::report_record_off(const engine::LearnerStats& s, double time_s) {
  if (record_off_reported_ || !s.record || s.record->error.empty()) return;
  record_off_reported_ = true;
  // The error names the file, the errno text and what became of the segment being written.
  base::log_error(s.record->error + "; experience recording is off, training goes on without it");
  engine::MetricsRow event;
  event.add("time_s", time_s).add("event", "record_off").add("error", s.record->error);
  metrics_->append(event);
}

std::string Run::checkpoint(double elapsed) {
  return checkpoint_and_prune(*dir_, cfg_.checkpoint.keep,
                              [&](const std::function<std::string(int64_t)>& path_of_step) {
                                return learner_->save_checkpoint(path_of_step, elapsed);
                              });
}

int Run::finish() {
  progress_->finish();
  // Bye to the actors, then stop the learner's threads, then the final
  // checkpoint: it holds every step trained, so a resume loses nothing.
  actors_->stop_restarting();  // their exit after the Bye is expected
  learner_->expect_actors_to_leave();
  server_->stop();
  actors_->shutdown(5.0);
  learner_->stop();
  const engine::LearnerStats final_stats = learner_->stats();
  // The time the final checkpoint holds and the stop row shows, so that a
  // resumed run's rows go on from the last row of this one.
  const double elapsed = elapsed_s();
  report_record_off(final_stats, elapsed);  // the last segment may have failed at the stop
  int code = 0;
  try {
    if (diverged_) {
      // Weights that are NaN would be the newest checkpoint, the one --resume takes.
      const std::string newest = dir_->newest_checkpoint(learner_->checkpoint_companions());
      std::cerr << "moonseed: no final checkpoint: the model's weights are not finite; "
                << (newest.empty() ? "there is no checkpoint to resume from" : "the last good one is " + newest)
                << "\n";
      code = 1;
    } else {
      checkpoint(elapsed);
    }
  } catch (const std::exception& e) {
    // The run still ends normally when an earlier checkpoint can be resumed;
    // with none, everything trained is lost, which the exit code says.
    const std::string newest = dir_->newest_checkpoint(learner_->checkpoint_companions());
    std::cerr << "moonseed: final checkpoint failed: " << e.what() << "; "
              << (newest.empty() ? "there is no checkpoint to resume from" : "--resume continues from " + newest)
              << "\n";
    if (newest.empty()) code = 1;
  }
  if (actors_failed_) code = 1;
  // The last row: every counter once nothing runs any more (steps the actors
  // made and episodes they ended during the stop are in it, and in the
  // experience log, but in no earlier row).
  engine::MetricsRow stop_row =
      counters_row(final_stats, cfg_, elapsed,
                   (final_stats.frames - last_frames_) / std::max(1e-9, t0_ + elapsed - last_tick_),
                   actors_->restarts());
  stop_row.add("event", "stop").add("reason", stop_reason_);
  metrics_->append(stop_row);
  print_summary(final_stats, elapsed);
  return code;
}

void Run::print_summary(const engine::LearnerStats& s, double elapsed_s) const {
  std::cerr << "moonseed: stopped: " << stop_reason_ << "\n"
            << "moonseed: " << format_number(elapsed_s) << " s, " << s.frames << " frames, " << s.episodes
            << " episodes, return_mean " << format_number(s.return_mean) << ", " << s.optimizer_steps
            << " optimizer steps\n"
            << "moonseed: run directory " << dir_->path() << "\n";
  if (const std::optional<engine::RecorderStats>& r = s.record) {
    std::cerr << "moonseed: experience log " << r->directory << ": " << r->recorded_steps << " steps in "
              << r->writer.durable_records << " records, " << format_number(r->writer.bytes_disk / 1048576.0)
              << " MiB on disk";
    if (r->writer.bytes_raw > 0 && r->writer.bytes_disk > 0) {
      std::cerr << " (" << format_number(static_cast<double>(r->writer.bytes_raw) /
                                         static_cast<double>(r->writer.bytes_disk)) << "x compression)";
    }
    if (r->dropped_steps > 0) std::cerr << ", " << r->dropped_steps << " steps dropped (queue full)";
    // The error itself was said when recording turned off.
    if (!r->error.empty()) {
      std::cerr << ", " << r->unrecorded_steps << " steps unrecorded (recording stopped on the error above)";
    }
    std::cerr << "\n";
  }

}

}  // namespace moonseed::cli
