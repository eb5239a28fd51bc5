// `moonseed run`, starting: the run directory and its protection, the
// learner (restored, warm-started, recording), the rpc server and local
// actors, the control socket. cli/engine/run.cc runs and ends it.
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <stdexcept>

#include "base/log.h"
#include "cli/common/auth_token.h"
#include "cli/engine/checkpoint_choice.h"
#include "cli/common/commands.h"
#include "cli/engine/hot_reload.h"
#include "cli/engine/learner_group.h"
#include "cli/engine/local_actors.h"
#include "cli/engine/progress.h"
#include "cli/engine/run.h"
#include "cli/engine/run_control.h"
#include "cli/engine/run_report.h"
#include "cli/engine/tensorboard_sink.h"
#include "dashboard/server.h"
#include "cli/engine/version.h"
#include "engine/group/c10d_group.h"
#include "engine/learner/checkpoint.h"
#include "engine/learner/learner.h"
#include "models/device.h"
#include "envs/describe.h"
#include "rpc/address.h"
#include "rpc/control_socket.h"
#include "rpc/server.h"

namespace moonseed::cli {
namespace {

// Unix socket paths are limited to 107 bytes; deep run directories fall back to /tmp.
std::string listen_address(const engine::ExperimentConfig& cfg, const engine::RunDirectory& dir) {
  if (!cfg.topology.listen.empty()) {
    // The ranks a run starts on its own host cannot share one TCP port: rank R takes PORT + R.
    if (cfg.topology.learners > 1 && cfg.topology.rendezvous.rfind("tcp:", 0) != 0) {
      return rank_listen_address(cfg.topology.listen, cfg.topology.rank);
    }
    return cfg.topology.listen;
  }
  if (cfg.topology.transport == "tcp") return "tcp:127.0.0.1:0";
  std::string path = dir.path() + "/learner.sock";
  if (path.size() > 100) path = "/tmp/moonseed-" + std::to_string(::getpid()) + ".sock";
  return "unix:" + path;
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

}  // namespace

void send_output_to(const std::string& path) {
  std::cout.flush();
  std::fflush(stdout);
  std::fflush(stderr);
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) throw std::runtime_error("cannot open " + path + ": " + std::strerror(errno));
  ::dup2(fd, STDOUT_FILENO);
  ::dup2(fd, STDERR_FILENO);
  ::close(fd);
}

void Run::open_run_directory() {
  loaded_from_ = options_.resume_dir.empty() ? options_.script : options_.resume_dir + "/config.lua";
  if (!options_.resume_dir.empty()) dir_ = engine::RunDirectory::open(options_.resume_dir);
  scripts::LoadedExperiment loaded = scripts::load_experiment_sources(loaded_from_, options_.overrides);
  cfg_ = loaded.config;
  env_spec_ = std::move(loaded.spec);
  sources_ = std::move(loaded.sources);
  protect();
  if (rank() > 0) {
    // Its directory is named by rank 0 once the group has met; it follows rank 0's resume.
    dir_.reset();
    join_group();
    return;
  }
  if (!dir_) {
    dir_ = engine::RunDirectory::create(cfg_.runs_dir, cfg_.name);
    lock_run_directory();
    save_sources(*dir_, sources_);
  } else {
    lock_run_directory();  // a resume: before it writes a byte there
  }
  if (options_.resume_dir.empty()) {
    dir_->write_file_atomic("config.lua", scripts::to_lua(cfg_));
  } else {
    write_or_warn(*dir_, "config.lua", scripts::to_lua(cfg_),
                  "config.lua keeps the config from before, without this resume's overrides");
  }
  if (options_.log_in_run_dir) send_output_to(dir_->path() + "/run.log");
  // The engine that produced the run's results; a resume writes the one that continues them.
  const std::string engine = engine_json(engine_info(cfg_.inference.device));
  if (options_.resume_dir.empty()) {
    dir_->write_file_atomic("engine.json", engine);
  } else {
    write_or_warn(*dir_, "engine.json", engine, "engine.json names the engine of the run's previous start");
  }
  if (cfg_.topology.learners > 1) join_group();
}

// One run at a time in a run directory: a second `--resume` of a live run
// would rewrite its config.lua, learner.address and metrics. The lock is the
// directory's own (flock), held by this process until it ends (never passed
// to the processes it starts: close-on-exec), and let go by the kernel
// however it ends, kill -9 included.
void Run::lock_run_directory() {
  const int fd = ::open(dir_->path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error("cannot open run directory " + dir_->path() + ": " + std::strerror(errno));
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    ::close(fd);
    if (err == EWOULDBLOCK) {
      throw std::runtime_error(dir_->path() + " is in use: another `moonseed run` is running in it (see its run.log "
                               "or `moonseed ctl " + dir_->path() + " status`); resume it once that run has ended");
    }
    throw std::runtime_error("cannot lock run directory " + dir_->path() + ": " + std::strerror(err));
  }
  run_lock_fd_ = fd;
}

int Run::rank() const { return cfg_.topology.learners > 1 ? cfg_.topology.rank : 0; }

// Before anything is written or served: the run's files are private (or the
// group's), and a learner reachable from other hosts has a token.
void Run::protect() {
  ::umask(cfg_.group_access ? 027 : 077);
  auth_token_ = auth_token(options_.auth_token_file);
  // Local actors read it from the environment they inherit.
  if (!options_.auth_token_file.empty()) ::setenv(kAuthTokenVariable, auth_token_.c_str(), 1);
  // Before the run directory exists: a refused dashboard must leave nothing behind.
  if (!cfg_.dashboard.listen.empty() && rank() == 0) {
    dashboard::Server::check_listen(cfg_.dashboard.listen, !auth_token_.empty());
  }
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
  // described once, by the loader; a rank serves its share of the actors
  learner_ = std::make_unique<engine::Learner>(rank_config(cfg_, rank()), dir_->run_id(), env_spec_);
  if (!auth_token_.empty()) learner_->set_auth_token(auth_token_);
  if (group_) join_learner_to_group();
  metrics_ = std::make_unique<engine::MetricsLog>(dir_->metrics_path());
  if (cfg_.log.tensorboard && rank() == 0) {  // the group's, once  // a new event file at every start, --resume too
    tensorboard_ = std::make_unique<TensorboardSink>(dir_->path(), scripts::to_lua(cfg_));
    metrics_->set_listener([sink = tensorboard_.get()](const engine::MetricsRow& row) { sink->row(row); });
  }
  engine::Counters start;
  std::string resumed = "(none)";  // the checkpoint restored; "" when a resume started over from step 0
  if (group_) {
    start = resume_group();
  } else if (!options_.resume_dir.empty()) {
    start = resume(&resumed);
  }
  // A run that starts from step 0, new or started over, warm-starts as its config says.
  if (!cfg_.warm_start.log.empty() && (options_.resume_dir.empty() || resumed.empty())) {
    warm_start(*learner_, cfg_, *metrics_);
  }
  if (cfg_.record.enabled) {
    const std::string record_dir = experience_directory(cfg_.record, dir_->path());
    learner_->record_to(record_dir);
    const engine::LearnerStats s = learner_->stats();
    if (s.record->error.empty()) std::cerr << "moonseed: recording experience to " << record_dir << "\n";
    report_record_off(s, start.elapsed_s);  // a log that cannot be opened (a disk still full on --resume)
  }
  return start;
}

// --resume: the newest good checkpoint, after what interrupted saves left;
// a "resume" row in metrics.jsonl says from where, with the restored counters.
// Newest first, a checkpoint is skipped, with a line saying which and why,
// when it is incomplete (a save interrupted), damaged since it was written
// (its manifest: engine/run/checkpoint_manifest.h), or refused by its load;
// only when none is left is the resume refused, listing them.
engine::Counters Run::resume(std::string* checkpoint) {
  const std::vector<std::string> removed = dir_->remove_unfinished_checkpoint_files();
  if (!removed.empty()) {
    std::string names;
    for (const std::string& name : removed) names += (names.empty() ? "" : ", ") + name;
    std::cerr << "moonseed: removed " << removed.size() << " file(s) of interrupted checkpoints: " << names << "\n";
  }
  const std::vector<std::string> companions = learner_->checkpoint_companions();
  const std::vector<std::string> all = dir_->checkpoints();
  if (all.empty()) {
    // Killed before its first checkpoint, or none could be written (a full disk): nothing was
    // kept, so nothing is lost by starting again. The run starts over from step 0 in its own
    // directory, as a requeued job's --resume expects; its resume row, of no checkpoint and
    // counters at 0, marks where the counters start again.
    std::cerr << "moonseed: " << dir_->path()
              << " has no checkpoint (the run ended before its first one was written): it starts again from step 0\n";
    append_resume_row("", engine::Counters{});
    if (checkpoint != nullptr) checkpoint->clear();
    return engine::Counters{};
  }
  // None complete: the newest alone, with what it has (the algorithm says what it lacks).
  const bool none_complete = dir_->newest_checkpoint(companions).empty();
  std::string tried;
  for (auto it = all.rbegin(); it != all.rend() && !(none_complete && it != all.rbegin()); ++it) {
    const std::string& ckpt = *it;
    const std::string missing = none_complete ? "" : dir_->missing_files(ckpt, companions);
    if (!missing.empty()) {
      std::cerr << "moonseed: skipping incomplete checkpoint " << ckpt << " (no " << missing
                << ": its save was interrupted)\n";
      tried += "\n  " + ckpt + ": incomplete (no " + missing + ")";
      continue;
    }
    std::string why = checkpoint_damage(ckpt, /*companions=*/true);
    engine::Counters start;
    if (why.empty()) {
      try {
        start = learner_->restore(ckpt);
      } catch (const engine::CheckpointError& e) {
        why = e.what();
      }
    }
    if (!why.empty()) {
      std::cerr << "moonseed: skipping checkpoint " << ckpt << ": " << why << "\n";
      tried += "\n  " + ckpt + ": " + why;
      continue;
    }
    if (checkpoint != nullptr) *checkpoint = ckpt;
    std::cerr << "moonseed: resumed " << ckpt << " (" << start.frames << " frames, " << start.optimizer_steps
              << " steps)\n";
    append_resume_row(std::filesystem::path(ckpt).lexically_relative(dir_->path()).string(), start);
    return start;
  }
  throw std::runtime_error(dir_->path() + " has no checkpoint that can be resumed; tried, newest first:" + tried +
                           "\n(`moonseed run " + dir_->config_path() + "` starts a new run of the same config)");
}

void Run::append_resume_row(const std::string& checkpoint, const engine::Counters& start) {
  engine::MetricsRow event;
  event.add("time_s", start.elapsed_s).add("event", "resume").add("checkpoint", checkpoint)
      .add("optimizer_steps", start.optimizer_steps).add("frames", start.frames).add("episodes", start.episodes)
      .add("trained_frames", start.trained_frames).add("train_time_s", start.train_s);
  if (cfg_.topology.eval_envs_per_actor > 0) event.add("eval_episodes", start.eval_episodes);
  // The algorithm's numbers as restored (R2D2: replay_size).
  for (const engine::Metric& m : learner_->stats().agent_metrics) event.add(m.name, m.value);
  metrics_->append(event);
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
  if (group_) place_actors(address);
  server_->start();
  learner_->start();
  // Remote actors (and tests) find the learner here.
  write_or_warn(*dir_, "learner.address", address + "\n", "remote actors must be given " + address + " themselves");

  LocalActorsOptions actor_options;
  actor_options.binary = actor_binary();
  if (!cfg_.env.python.empty()) {
    // Python actors: the interpreter runs moonseed.actor, which serves env.python's envs.
    envs::PythonCommand python = envs::python_actor_command(engine::env_files(cfg_.env));
    actor_options.binary = python.argv.front();
    actor_options.arguments.assign(python.argv.begin() + 1, python.argv.end());
    actor_options.environment = std::move(python.environment);
  }
  actor_options.address = address;
  const engine::TopologyConfig mine = rank_config(cfg_, rank()).topology;  // this rank's share
  actor_options.count = mine.local_actors < 0 ? mine.actors : std::min(mine.local_actors, mine.actors);
  actor_options.log_dir = dir_->path() + "/actors";
  actor_options.env = engine::env_text(cfg_.env);
  actor_options.rules.deaths_to_park = cfg_.topology.actor_deaths_to_park;
  actor_options.rules.window_s = cfg_.topology.actor_death_window_s;
  actor_options.rules.max_backoff_s = cfg_.topology.actor_max_backoff_s;
  actor_options.rules.first_backoff_s = std::min(1.0, cfg_.topology.actor_max_backoff_s);
  actor_options.memory_limit_bytes = static_cast<int64_t>(cfg_.topology.actor_memory_mb) << 20;
  // An actor that sent env steps beyond its reset since it started made progress (RestartPolicy).
  actor_options.env_steps = [learner = learner_.get()](int id) { return learner->actor_env_steps(id); };
  actors_ = std::make_unique<LocalActors>(actor_options);
  actors_->start();

  std::cerr << "moonseed: run " << dir_->path() << "\n"
            << "moonseed: " << cfg_.env.id << (cfg_.env.python.empty() ? "" : " (Python: " + cfg_.env.python + ")")
            << ", " << mine.actors << (cfg_.env.python.empty() ? "" : " Python") << " actors x "
            << cfg_.topology.envs_per_actor << " envs, learner"
            << (group_ ? " rank " + std::to_string(rank()) + " of " + std::to_string(cfg_.topology.learners) : "")
            << " on " << address << "\n";
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
      RunContext{*learner_, cfg_, *reload_, *dir_, *progress_, [this] { return elapsed_s(); }, stop_reason_,
                 [this] { return checkpoint(elapsed_s(), learner_->stats()); }, rank(),
                 group_ && rank() == 0 ? &group_status_ : nullptr});
}

// The dashboard (docs/dashboard.md) on its own threads: it reads the run
// directory's files, and the status the control loop hands it at each tick.
void Run::start_dashboard() {
  if (cfg_.dashboard.listen.empty() || rank() > 0) return;  // rank 0's shows the group
  dashboard_ = std::make_unique<dashboard::Server>(std::vector<std::string>{dir_->path()}, auth_token_,
                                                   dashboard::ServerOptions::with_hosts(cfg_.dashboard.hosts));
  const std::string url = dashboard_->start(cfg_.dashboard.listen);
  dashboard_->set_status(run_control_->handle("status"));
  write_or_warn(*dir_, "dashboard.address", url + "\n", "open the dashboard at " + url);
  std::cerr << "moonseed: dashboard on " << url << "\n";
}

}  // namespace moonseed::cli
