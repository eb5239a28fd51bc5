// `moonseed run`: the learner, its rpc server and the local actors of one run,
// driven by a control loop that prints progress, writes metrics.jsonl,
// checkpoints on its cadence and stops on the script's conditions or a signal.
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>

#include "base/log.h"
#include "cli/commands.h"
#include "cli/hot_reload.h"
#include "cli/run_control.h"
#include "cli/local_actors.h"
#include "cli/progress.h"
#include "cli/run_report.h"
#include "engine/config/experiment_config.h"
#include "engine/learner/learner.h"
#include "engine/run/metrics_log.h"
#include "engine/run/run_directory.h"
#include "engine/config/schedule.h"
#include "rpc/control_socket.h"
#include "rpc/server.h"
#include "scripts/experiment_loader.h"

namespace moonseed::cli {
namespace {

const char* kHelp =
    "usage: moonseed run SCRIPT.lua [key=value...] [--quiet] [--no-watch] [--announce FILE]\n"
    "       moonseed run --resume RUN_DIR [key=value...] [--quiet] [--no-watch]\n"
    "\n"
    "Trains the experiment the script declares: a learner in this process and\n"
    "topology.actors local actor processes over a Unix socket (or TCP when\n"
    "topology.transport = \"tcp\"). key=value overrides any config field, typed\n"
    "by the schema, e.g. optimizer.lr=3e-4 topology.actors=4 stop.seconds=60.\n"
    "\n"
    "Every run gets a directory RUNS_DIR/NAME-DATE-TIME with config.lua (the\n"
    "resolved config), metrics.jsonl (one JSON object per log tick), checkpoints/\n"
    "and actors/ (actor logs). SIGINT or SIGTERM saves a checkpoint and exits;\n"
    "--resume continues from the newest checkpoint of RUN_DIR.\n"
    "\n"
    "Hot reload: saving the script (or a recipe it extends) while the run trains\n"
    "applies it within a second. Hot fields (learning rate, loss coefficients,\n"
    "stop, log, checkpoint cadence) change at the next training step; a change to a\n"
    "restart-only field (model, topology, batch sizes, optimizer kind...) is\n"
    "refused, naming the field, and the run goes on unchanged; a script with an\n"
    "error changes nothing. Each reload is printed and logged in metrics.jsonl.\n"
    "With --resume the run directory's config.lua is watched. --no-watch turns it off.\n"
    "\n"
    "Control: the run serves RUN_DIR/control.sock; `moonseed ctl RUN_DIR status`,\n"
    "`moonseed attach RUN_DIR` (a console) or ms.attach in `moonseed repl` talk to it.\n"
    "--announce FILE writes the run directory's path to FILE once it exists\n"
    "(how ms.start finds the run it started).\n"
    "\n"
    "With MOONSEED_AUTH_TOKEN set, actors must present the same token (local\n"
    "actors inherit it; remote ones use the variable or --auth-token).\n"
    "\n"
    "The run stops at the first of stop.frames, stop.seconds or stop.return_mean\n"
    "(mean return over the last 100 episodes, once 100 episodes have ended).\n";

struct RunArgs {
  std::string script;
  std::string resume_dir;
  std::vector<std::string> overrides;
  bool quiet = false;
  bool watch = true;
  std::string announce;
};

RunArgs parse(const Args& args) {
  RunArgs out;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--resume") {
      if (i + 1 >= args.size()) throw std::invalid_argument("--resume needs a run directory");
      out.resume_dir = args[++i];
    } else if (a == "--quiet") {
      out.quiet = true;
    } else if (a == "--no-watch") {
      out.watch = false;
    } else if (a == "--announce") {
      if (i + 1 >= args.size()) throw std::invalid_argument("--announce needs a file");
      out.announce = args[++i];
    } else if (a.find('=') != std::string::npos && a.rfind("--", 0) != 0) {
      out.overrides.push_back(a);
    } else if (a.rfind("--", 0) == 0) {
      throw std::invalid_argument("unknown option " + a + " (see moonseed run --help)");
    } else if (out.script.empty()) {
      out.script = a;
    } else {
      throw std::invalid_argument("unexpected argument '" + a + "': overrides are key=value");
    }
  }
  if (out.script.empty() == out.resume_dir.empty()) {
    throw std::invalid_argument("give either SCRIPT or --resume RUN_DIR (see moonseed run --help)");
  }
  return out;
}

std::string self_binary() {
  char buf[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) throw std::runtime_error("cannot find the moonseed binary (/proc/self/exe)");
  return std::string(buf, static_cast<size_t>(n));
}

// Unix socket paths are limited to 107 bytes; deep run directories fall back to /tmp.
std::string listen_address(const engine::ExperimentConfig& cfg, const engine::RunDirectory& dir) {
  if (!cfg.topology.listen.empty()) return cfg.topology.listen;
  if (cfg.topology.transport == "tcp") return "tcp:127.0.0.1:0";
  std::string path = dir.path() + "/learner.sock";
  if (path.size() > 100) path = "/tmp/moonseed-" + std::to_string(::getpid()) + ".sock";
  return "unix:" + path;
}

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

// Where record.dir points: RUN_DIR/experience when empty, relative paths from the run directory.
std::string experience_directory(const engine::RecordConfig& record, const std::string& run_dir) {
  if (record.dir.empty()) return run_dir + "/experience";
  if (record.dir[0] == '/') return record.dir;
  return run_dir + "/" + record.dir;
}

// config.warm_start before the actors start, with a progress line; the report
// goes into metrics.jsonl as a "warm_start" event. What is printed follows the
// report (training steps, or a replay filled), not the algorithm's name.
void warm_start(engine::Learner& learner, const engine::ExperimentConfig& cfg, const engine::RunDirectory& dir) {
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
  engine::MetricsLog metrics(dir.metrics_path());
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

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

int run_command(const Args& args) {
  if (wants_help(args)) {
    std::fputs(kHelp, stdout);
    return 0;
  }
  RunArgs run = parse(args);
  std::optional<engine::RunDirectory> dir;
  const std::string loaded_from = run.resume_dir.empty() ? run.script : run.resume_dir + "/config.lua";
  if (!run.resume_dir.empty()) dir = engine::RunDirectory::open(run.resume_dir);
  scripts::LoadedExperiment loaded = scripts::load_experiment_sources(loaded_from, run.overrides);
  engine::ExperimentConfig cfg = loaded.config;
  if (!dir) {
    dir = engine::RunDirectory::create(cfg.runs_dir, cfg.name);
    save_sources(*dir, loaded.sources);
  }
  dir->write_file_atomic("config.lua", scripts::to_lua(cfg));

  warn_if_reference_blas();
  SignalWaiter signals;
  engine::Learner learner(cfg, dir->run_id());
  // Local actors inherit the variable; remote ones are given it (or --auth-token).
  if (const char* token = std::getenv("MOONSEED_AUTH_TOKEN")) learner.set_auth_token(token);
  engine::Counters start_counters;
  if (!run.resume_dir.empty()) {
    std::string ckpt = dir->newest_checkpoint();
    if (ckpt.empty()) throw std::runtime_error(dir->path() + " has no checkpoint to resume from");
    start_counters = learner.restore(ckpt);
    std::cerr << "moonseed: resumed " << ckpt << " (" << start_counters.frames << " frames, "
              << start_counters.optimizer_steps << " steps)\n";
  }
  if (!cfg.warm_start.log.empty() && run.resume_dir.empty()) warm_start(learner, cfg, *dir);
  if (cfg.record.enabled) {
    const std::string record_dir = experience_directory(cfg.record, dir->path());
    learner.record_to(record_dir);
    if (!learner.stats().record->error.empty()) std::cerr << "moonseed: training goes on without a log\n";
    else std::cerr << "moonseed: recording experience to " << record_dir << "\n";
  }
  engine::MetricsLog metrics(dir->metrics_path());

  rpc::ServerOptions server_options;
  server_options.io_threads = cfg.inference.io_threads;
  rpc::Server server(learner.actor_service(), server_options);
  if (cfg.inference.io_threads == 0) {
    learner.set_io_pump([&server](std::chrono::nanoseconds max_wait) { server.run_for(max_wait); },
                        [&server] { server.wake(); });
  }
  // Whatever happens from here on, the learner's threads (which may pump the
  // server's sockets) stop before the server is destroyed.
  struct StopLearnerFirst {
    engine::Learner& learner;
    ~StopLearnerFirst() { learner.stop(); }
  } stop_learner_first{learner};
  const std::string address = server.listen(listen_address(cfg, *dir)).to_string();
  server.start();
  learner.start();
  // Remote actors (and tests) find the learner here.
  dir->write_file_atomic("learner.address", address + "\n");

  LocalActorsOptions actor_options;
  actor_options.binary = self_binary();
  actor_options.address = address;
  actor_options.count = cfg.topology.local_actors < 0
                            ? cfg.topology.actors
                            : std::min(cfg.topology.local_actors, cfg.topology.actors);
  actor_options.log_dir = dir->path() + "/actors";
  LocalActors actors(actor_options);
  actors.start();

  std::cerr << "moonseed: run " << dir->path() << "\n"
            << "moonseed: " << cfg.env.id << ", " << cfg.topology.actors << " actors x "
            << cfg.topology.envs_per_actor << " envs, learner on " << address << "\n";

  HotReload reload(loaded_from, run.overrides, watched_files(loaded.sources), learner, *dir, metrics);
  constexpr double kWatchPeriod = 0.25;
  double next_watch = now_s() + kWatchPeriod;

  Progress progress(!run.quiet && cfg.log.progress);
  const double t0 = now_s() - start_counters.elapsed_s;
  std::string stop_reason;
  // `moonseed ctl` / `attach` find the socket through control.address (a deep
  // run directory puts it in /tmp, as the learner's socket).
  std::string control_path = dir->path() + "/control.sock";
  if (control_path.size() > 100) control_path = "/tmp/moonseed-" + std::to_string(::getpid()) + "-control.sock";
  rpc::ControlServer control(control_path);
  dir->write_file_atomic("control.address", "unix:" + control_path + "\n");
  if (!run.announce.empty()) {
    // Written after the control socket listens, so whoever reads it can connect.
    const std::string tmp = run.announce + ".partial";
    if (std::FILE* f = std::fopen(tmp.c_str(), "w")) {
      std::fprintf(f, "%s\n", dir->path().c_str());
      std::fclose(f);
      std::rename(tmp.c_str(), run.announce.c_str());
    }
  }
  RunControl run_control(RunContext{learner, cfg, reload, *dir, progress, [&] { return now_s() - t0; }, stop_reason});
  uint64_t seen_version = 0;
  double next_tick = now_s() + cfg.log.interval_s;
  double next_checkpoint = cfg.checkpoint.interval_s > 0 ? now_s() + cfg.checkpoint.interval_s : 1e300;
  int64_t last_frames = start_counters.frames;
  double last_tick = now_s();
  bool metrics_ok = true;
  bool record_error_logged = false;

  while (stop_reason.empty()) {
    const double wake_at = run.watch ? std::min(next_tick, next_watch) : next_tick;
    const double old_checkpoint_interval = cfg.checkpoint.interval_s;
    int sig = signals.wait(wake_at - now_s(), control, [&](const std::string& line) { return run_control.handle(line); });
    if (sig) {
      stop_reason = sig == SIGINT ? "interrupted (SIGINT)" : "terminated (SIGTERM)";
      break;
    }
    if (!stop_reason.empty()) break;  // `stop` from the control socket
    double now = now_s();
    if (run.watch && now >= next_watch) {
      next_watch = now + kWatchPeriod;
      reload.poll(cfg, now - t0, progress);
      now = now_s();
    }
    if (reload.config_version() != seen_version) {
      // A reload or a control `set` replaced cfg: the control loop's own fields.
      seen_version = reload.config_version();
      progress.set_enabled(!run.quiet && cfg.log.progress);
      next_tick = std::min(next_tick, now + cfg.log.interval_s);
      if (cfg.checkpoint.interval_s != old_checkpoint_interval) {
        next_checkpoint = cfg.checkpoint.interval_s > 0 ? now + cfg.checkpoint.interval_s : 1e300;
      }
    }
    // Actors' reports (a reward-shaping function that failed, ...): the learner
    // printed them; they go into metrics.jsonl too.
    for (const std::string& notice : learner.take_notices()) {
      engine::MetricsRow event;
      event.add("time_s", now - t0).add("event", "actor_notice").add("notice", notice);
      metrics.append(event);
    }
    if (now < next_tick) continue;
    engine::LearnerStats s = learner.stats();
    // Scheduled control-loop fields (stop, log, checkpoint) at the current frame count.
    engine::ExperimentConfig live = cfg;
    if (!live.schedules.empty()) engine::apply_schedules(live, static_cast<double>(s.frames));
    next_tick = now + std::max(0.05, live.log.interval_s);
    const double elapsed = now - t0;
    const double fps = (s.frames - last_frames) / std::max(1e-9, now - last_tick);
    last_frames = s.frames;
    last_tick = now;

    const engine::MetricsRow row = counters_row(s, cfg, elapsed, fps, actors.restarts());
    if (s.record) {
      const engine::RecorderStats& r = *s.record;
      if (!r.error.empty() && !record_error_logged) {
        record_error_logged = true;
        engine::MetricsRow event;
        event.add("time_s", elapsed).add("event", "record_off").add("error", r.error);
        metrics.append(event);
      }
    }
    const bool written = metrics.append(row);
    if (!written && metrics_ok) {
      base::log_warning("cannot write " + dir->metrics_path() + " (disk full?); training goes on");
    }
    metrics_ok = written;
    progress.update(elapsed, s, fps, cfg.topology.actors);

    stop_reason = cli::stop_reason(live.stop, s, elapsed);
    if (stop_reason.empty() && now >= next_checkpoint) {
      next_checkpoint = now + std::max(1.0, live.checkpoint.interval_s);
      try {
        checkpoint_and_prune(*dir, s.optimizer_steps, cfg.checkpoint.keep,
                             [&](const std::string& path) { learner.save_checkpoint(path, elapsed); });
      } catch (const std::exception& e) {
        base::log_warning(std::string("checkpoint failed: ") + e.what() + "; training goes on");
      }
    }
  }
  progress.finish();

  // Bye to the actors, then stop the learner's threads, then the final
  // checkpoint: it holds every step trained, so a resume loses nothing.
  const double elapsed = now_s() - t0;
  server.stop();
  actors.shutdown(5.0);
  learner.stop();
  const engine::LearnerStats final_stats = learner.stats();
  int code = 0;
  try {
    checkpoint_and_prune(*dir, final_stats.optimizer_steps, cfg.checkpoint.keep,
                         [&](const std::string& path) { learner.save_checkpoint(path, elapsed); });
  } catch (const std::exception& e) {
    std::cerr << "moonseed: final checkpoint failed: " << e.what() << "\n";
    code = 1;
  }
  // The last row: every counter once nothing runs any more (steps the actors
  // made and episodes they ended during the stop are in it, and in the
  // experience log, but in no earlier row).
  const double final_time = now_s();
  engine::MetricsRow stop_row =
      counters_row(final_stats, cfg, final_time - t0,
                   (final_stats.frames - last_frames) / std::max(1e-9, final_time - last_tick), actors.restarts());
  stop_row.add("event", "stop").add("reason", stop_reason);
  metrics.append(stop_row);
  std::cerr << "moonseed: stopped: " << stop_reason << "\n"
            << "moonseed: " << format_number(elapsed) << " s, " << final_stats.frames << " frames, "
            << final_stats.episodes << " episodes, return_mean " << format_number(final_stats.return_mean) << ", "
            << final_stats.optimizer_steps << " optimizer steps\n"
            << "moonseed: run directory " << dir->path() << "\n";
  if (const std::optional<engine::RecorderStats>& r = final_stats.record) {
    std::cerr << "moonseed: experience log " << r->directory << ": " << r->recorded_steps << " steps in "
              << r->writer.written << " records, " << format_number(r->writer.bytes_disk / 1048576.0)
              << " MiB on disk";
    if (r->writer.bytes_raw > 0 && r->writer.bytes_disk > 0) {
      std::cerr << " (" << format_number(static_cast<double>(r->writer.bytes_raw) /
                                         static_cast<double>(r->writer.bytes_disk)) << "x compression)";
    }
    if (r->dropped_steps > 0) std::cerr << ", " << r->dropped_steps << " steps dropped";
    if (!r->error.empty()) std::cerr << "; recording stopped early: " << r->error;
    std::cerr << "\n";
  }
  return code;
}

}  // namespace moonseed::cli
