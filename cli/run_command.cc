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
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>

#include "cli/commands.h"
#include "cli/local_actors.h"
#include "cli/progress.h"
#include "engine/config.h"
#include "engine/learner.h"
#include "engine/metrics_log.h"
#include "engine/run_directory.h"
#include "rpc/server.h"
#include "scripts/experiment_loader.h"

namespace moonseed::cli {
namespace {

const char* kHelp =
    "usage: moonseed run SCRIPT.lua [key=value...] [--quiet]\n"
    "       moonseed run --resume RUN_DIR [key=value...] [--quiet]\n"
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
  // Waits up to `seconds`; returns the signal number, or 0 on timeout.
  int wait(double seconds) {
    pollfd p{fd_, POLLIN, 0};
    int ms = static_cast<int>(std::max(0.0, seconds) * 1000);
    if (::poll(&p, 1, ms) <= 0) return 0;
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
  engine::ExperimentConfig cfg;
  if (!run.resume_dir.empty()) {
    dir = engine::RunDirectory::open(run.resume_dir);
    cfg = scripts::load_experiment(dir->config_path(), run.overrides);
  } else {
    cfg = scripts::load_experiment(run.script, run.overrides);
    dir = engine::RunDirectory::create(cfg.runs_dir, cfg.name);
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
  engine::MetricsLog metrics(dir->metrics_path());

  rpc::ServerOptions server_options;
  server_options.io_threads = cfg.inference.io_threads;
  rpc::Server server(learner, server_options);
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

  Progress progress(!run.quiet && cfg.log.progress);
  const double t0 = now_s() - start_counters.elapsed_s;
  double next_tick = now_s() + cfg.log.interval_s;
  double next_checkpoint = cfg.checkpoint.interval_s > 0 ? now_s() + cfg.checkpoint.interval_s : 1e300;
  int64_t last_frames = start_counters.frames;
  double last_tick = now_s();
  std::string stop_reason;
  bool metrics_ok = true;

  while (stop_reason.empty()) {
    int sig = signals.wait(next_tick - now_s());
    if (sig) {
      stop_reason = sig == SIGINT ? "interrupted (SIGINT)" : "terminated (SIGTERM)";
      break;
    }
    const double now = now_s();
    if (now < next_tick) continue;
    next_tick = now + cfg.log.interval_s;
    engine::LearnerStats s = learner.stats();
    const double elapsed = now - t0;
    const double fps = (s.frames - last_frames) / std::max(1e-9, now - last_tick);
    last_frames = s.frames;
    last_tick = now;

    engine::MetricsRow row;
    row.add("time_s", elapsed).add("frames", s.frames).add("fps", fps)
        .add("episodes", s.episodes).add("return_mean", s.return_mean)
        .add("length_mean", s.length_mean).add("optimizer_steps", s.optimizer_steps)
        .add("trained_frames", s.trained_frames).add("loss_total", s.loss_total)
        .add("loss_policy", s.loss_policy).add("loss_baseline", s.loss_baseline)
        .add("loss_entropy", s.loss_entropy).add("grad_norm", s.grad_norm)
        .add("mean_rho", s.mean_rho).add("learning_rate", s.learning_rate)
        .add("policy_lag", s.policy_lag).add("actors", s.actors_connected)
        .add("actor_restarts", actors.restarts()).add("queue", s.queue_size)
        .add("inference_batch_envs", s.mean_batch_envs);
    const bool written = metrics.append(row);
    if (!written && metrics_ok) {
      std::cerr << "\nmoonseed: cannot write " << dir->metrics_path() << " (disk full?); training goes on\n";
    }
    metrics_ok = written;
    progress.update(elapsed, s, fps, cfg.topology.actors);

    if (cfg.stop.frames > 0 && s.frames >= cfg.stop.frames) {
      stop_reason = "reached stop.frames = " + std::to_string(cfg.stop.frames);
    } else if (cfg.stop.seconds > 0 && elapsed >= cfg.stop.seconds) {
      stop_reason = "reached stop.seconds = " + format_number(cfg.stop.seconds);
    } else if (cfg.stop.return_mean != 0 && s.episodes >= 100 && s.return_mean >= cfg.stop.return_mean) {
      stop_reason = "return_mean " + format_number(s.return_mean) + " >= stop.return_mean = " +
                    format_number(cfg.stop.return_mean);
    }
    if (stop_reason.empty() && now >= next_checkpoint) {
      next_checkpoint = now + cfg.checkpoint.interval_s;
      try {
        learner.save_checkpoint(dir->checkpoint_path(s.optimizer_steps), elapsed);
        dir->prune_checkpoints(cfg.checkpoint.keep);
      } catch (const std::exception& e) {
        std::cerr << "\nmoonseed: checkpoint failed: " << e.what() << "; training goes on\n";
      }
    }
  }
  progress.finish();

  // Final checkpoint first (between two training steps), then Bye to actors.
  engine::LearnerStats s = learner.stats();
  const double elapsed = now_s() - t0;
  int code = 0;
  try {
    learner.save_checkpoint(dir->checkpoint_path(s.optimizer_steps), elapsed);
    dir->prune_checkpoints(cfg.checkpoint.keep);
  } catch (const std::exception& e) {
    std::cerr << "moonseed: final checkpoint failed: " << e.what() << "\n";
    code = 1;
  }
  server.stop();
  actors.shutdown(5.0);
  learner.stop();
  std::cerr << "moonseed: stopped: " << stop_reason << "\n"
            << "moonseed: " << format_number(elapsed) << " s, " << s.frames << " frames, "
            << s.episodes << " episodes, return_mean " << format_number(s.return_mean) << ", "
            << s.optimizer_steps << " optimizer steps\n"
            << "moonseed: run directory " << dir->path() << "\n";
  return code;
}

}  // namespace moonseed::cli
