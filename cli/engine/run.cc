// `moonseed run`, running: the control loop (signals, hot reload, metrics rows,
// progress, hung and parked actors, stop rules, checkpoints). cli/engine/run_start.cc
// starts the run, cli/engine/run_finish.cc ends it.
#include "cli/engine/run.h"

#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <filesystem>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <stdexcept>

#include "base/log.h"
#include "cli/common/commands.h"
#include "cli/engine/hot_reload.h"
#include "cli/engine/learner_group.h"
#include "cli/engine/local_actors.h"
#include "cli/engine/progress.h"
#include "cli/engine/run_control.h"
#include "cli/engine/run_report.h"
#include "cli/engine/tensorboard_sink.h"
#include "curves/metrics_row.h"
#include "dashboard/server.h"
#include "engine/config/schedule.h"
#include "engine/group/c10d_group.h"
#include "engine/learner/learner.h"
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

}  // namespace

Run::Run(RunOptions options) : options_(std::move(options)) {}

Run::~Run() {
  // In reverse of setup(), except that the learner's threads (which may pump
  // the server's sockets) stop before the server is destroyed.
  dashboard_.reset();
  run_control_.reset();
  control_.reset();
  progress_.reset();
  reload_.reset();
  actors_.reset();
  if (learner_) learner_->stop();
  learner_.reset();
  values_.reset();
  group_.reset();
  local_ranks_.reset();  // kills ranks still running: a run that throws leaves none behind
  if (run_lock_fd_ >= 0) ::close(run_lock_fd_);  // the run directory is free for a --resume
}

double Run::elapsed_s() const { return now_s() - t0_; }

void Run::setup() {
  // Output piped into a reader that goes away (head, a closed ssh session)
  // must not kill the run before its final checkpoint: writes fail instead.
  ::signal(SIGPIPE, SIG_IGN);
  open_run_directory();
  best_ = std::make_unique<BestCheckpoint>(dir_->path(), cfg_.topology.eval_envs_per_actor > 0);
  warn_if_reference_blas();
  signals_ = std::make_unique<SignalWaiter>();
  const engine::Counters start = start_learner();
  learner_->set_frame_limit(cfg_.stop.frames);  // acting stops at stop.frames, however late a tick comes
  // A resumed run's clock goes on from its checkpoint's wall time; it
  // runs before the actors start, so their joins come after the resume row.
  t0_ = now_s() - start.elapsed_s;
  start_serving();
  reload_ = std::make_unique<HotReload>(loaded_from_, options_.overrides, watched_files(sources_), *learner_, *dir_,
                                        *metrics_);
  next_watch_ = now_s() + kWatchPeriod;
  progress_ = std::make_unique<Progress>(!options_.quiet && cfg_.log.progress);
  last_frames_ = start.frames;
  open_control();
  run_control_->set_local_actors(actors_.get());
  start_dashboard();
  next_tick_ = now_s() + cfg_.log.interval_s;
  next_checkpoint_ = cfg_.checkpoint.interval_s > 0 ? now_s() + cfg_.checkpoint.interval_s : 1e300;
  last_tick_ = now_s();
}

bool Run::tick() {
  // The stop rules are looked at every kStopCheckPeriod_s, not only at rows.
  double wake_at = std::min(next_tick_, now_s() + kStopCheckPeriod_s);
  if (options_.watch) wake_at = std::min(wake_at, next_watch_);
  const double old_checkpoint_interval = cfg_.checkpoint.interval_s;
  const int sig = signals_->wait(wake_at - now_s(), *control_,
                                 [this](const std::string& line) { return run_control_->handle(line); });
  if (sig) {
    stop_reason_ = sig == SIGINT ? "interrupted (SIGINT)" : "terminated (SIGTERM)";
    signaled_ = true;
    return false;
  }
  if (!stop_reason_.empty()) return false;  // `stop` from the control socket
  double now = now_s();
  // A group's config follows rank 0's script; the others never reload on their own.
  if (options_.watch && rank() == 0 && now >= next_watch_) {
    next_watch_ = now + kWatchPeriod;
    reload_->poll(cfg_, now - t0_, *progress_);
    now = now_s();
  }
  if (reload_->config_version() != seen_version_) {
    // A reload or a control `set` replaced cfg_: the control loop's own fields.
    seen_version_ = reload_->config_version();
    learner_->set_frame_limit(cfg_.stop.frames);
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
  check_group();
  if (now >= next_tick_) {
    log_tick(now);
  } else if (stop_reason_.empty()) {
    const engine::LearnerStats s = run_stats(0, nullptr, nullptr);
    check_stop_rules(s, live_config(s.frames));
  }
  return stop_reason_.empty();
}

void Run::check_group() {
  if (!group_ || !stop_reason_.empty()) return;
  const engine::LearnerStats s = learner_->stats();
  std::string failure = group_->failure();
  if (failure.empty()) failure = s.group_failure;
  if (!failure.empty()) {
    group_failed_ = true;
    stop_reason_ = failure;
  } else if (s.group_stopped) {
    stop_reason_ = rank() == 0 ? "a learner rank stopped the group" : "the learner group stopped (rank 0's decision)";
  }
}

engine::LearnerStats Run::run_stats(double fps, engine::MetricsRow* columns, double* group_fps) {
  engine::LearnerStats s = learner_->stats();
  if (!group_ || (columns == nullptr && rank() > 0)) return s;  // the group's numbers: rank 0's, or at a log tick
  // One read of the ranks' reports: the placement of actors and the rows see the same.
  const std::vector<std::optional<std::string>> reports = values_->reports();
  if (columns != nullptr) {  // once a log tick
    const std::string report = rank_report(rank(), host_, s, fps, ++reports_published_, actor_address_);
    values_->publish_report(report);
    update_placement(report, reports);
  }
  if (rank() > 0) return s;
  const GroupView view = group_view(s, fps, host_, reports, cfg_.topology.learners);
  if (group_fps != nullptr) *group_fps = view.fps;
  if (columns != nullptr) {
    group_status_.update(view, elapsed_s());  // for `status`, which the dashboard gets next
    view.add_columns(*columns);
    columns->add("weights_checked_step", s.weights_checked_step);
    char hash[24];
    std::snprintf(hash, sizeof hash, "%016llx", static_cast<unsigned long long>(s.weights_hash));
    if (s.weights_checked_step > 0) columns->add("weights_checked_hash", std::string(hash));
  }
  return view.stats;
}

engine::ExperimentConfig Run::live_config(int64_t frames) const {
  engine::ExperimentConfig live = cfg_;
  if (!live.schedules.empty()) engine::apply_schedules(live, static_cast<double>(frames));
  return live;
}

// A learner that failed (its model diverged), then the stop rules.
void Run::check_stop_rules(const engine::LearnerStats& s, const engine::ExperimentConfig& live) {
  if (stop_reason_.empty() && !s.failure.empty()) {
    diverged_ = true;
    stop_reason_ = s.failure;
  }
  // The others follow rank 0.
  if (stop_reason_.empty() && rank() == 0) stop_reason_ = cli::stop_reason(live.stop, s, elapsed_s());
}

// The metrics row, the progress line, the stop rules and the periodic checkpoint.
void Run::log_tick(double now) {
  const engine::LearnerStats own = learner_->stats();
  const double own_fps = (own.frames - last_frames_) / std::max(1e-9, now - last_tick_);
  engine::MetricsRow group_columns;
  double fps = own_fps;
  const engine::LearnerStats s = group_ ? run_stats(own_fps, &group_columns, &fps) : own;
  // Scheduled control-loop fields (stop, log, checkpoint) at the current frame count.
  const engine::ExperimentConfig live = live_config(s.frames);
  next_tick_ = now + std::max(0.05, live.log.interval_s);
  const double elapsed = now - t0_;
  last_frames_ = own.frames;
  last_tick_ = now;

  watch_actors(live, elapsed, s.actors_connected);
  report_record_off(s, elapsed);
  // A row that cannot be written is dropped; MetricsLog says so once per outage.
  const SlotCounts slots = count_slots(actors_->slots());  // one look at the slots for the row and the line
  engine::MetricsRow row = counters_row(s, cfg_, elapsed, fps, actors_->restarts(), slots);
  for (const auto& [key, json] : group_columns.fields()) row.add_json(key, json);  // each rank's, in a group
  if (group_) row.add("steps_without_batch", own.steps_without_batch);
  metrics_->append(row);
  if (tensorboard_) tensorboard_->flush();  // this tick's rows and events, fsync'd
  run_control_->sample_actors();  // the actors' rates over this interval, for `ctl status`
  if (dashboard_) dashboard_->set_status(run_control_->handle("status"));
  progress_->update(elapsed, s, fps, cfg_.topology.actors, slot_note(slots));

  check_stop_rules(s, live);
  if (stop_reason_.empty() && rank() == 0 && now >= next_checkpoint_) {  // rank 0 checkpoints the group
    const double interval = std::max(1.0, live.checkpoint.interval_s);
    next_checkpoint_ = now + interval;
    try {
      const std::string path = checkpoint(elapsed, s);
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

// Hung actors lose their slot (a local one is killed, which counts as its
// death, and restarted or parked); parked local slots are reported, and when
// every one is parked and no actor is connected, the run stops: nothing would
// train any more.
void Run::watch_actors(const engine::ExperimentConfig& live, double elapsed, int connected) {
  for (const engine::HungActor& hung : learner_->release_hung_actors(live.topology.actor_timeout_s)) {
    actors_->kill(hung.id, Death{Death::Cause::kHung, 0,
                                 "no step batch for " + format_number(hung.silent_s) + " s (timeout " +
                                     format_number(hung.timeout_s) + " s)"});
  }
  for (const LocalActors::Parked& parked : actors_->take_parked()) {
    engine::MetricsRow event;
    event.add("time_s", elapsed).add("event", "actor_parked").add("actor", parked.id).add("reason", parked.message);
    metrics_->append(event);
  }
  if (actors_->all_parked() && connected == 0 && stop_reason_.empty()) {
    actors_failed_ = true;
    std::string why;
    for (const SlotState& slot : actors_->slots()) {
      why += (why.empty() ? "" : "; ") + ("actor " + std::to_string(slot.id) + " " + slot.last_death);
    }
    stop_reason_ = "no actor can run: every local actor slot is parked after repeated failures of " +
                   engine::env_text(cfg_.env) + " (" + why + ") and no remote actor is connected";
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

std::string Run::checkpoint(double elapsed, const engine::LearnerStats& s) {
  if (rank() > 0) {
    throw std::runtime_error("rank " + std::to_string(rank()) + " keeps no checkpoint: rank 0 saves the group's");
  }
  const std::string path = checkpoint_and_prune(*dir_, cfg_.checkpoint.keep,
                                                [&](const std::function<std::string(int64_t)>& path_of_step) {
                                                  return learner_->save_checkpoint(path_of_step, elapsed);
                                                });
  keep_best(path, s, elapsed);
  return path;
}

void Run::keep_best(const std::string& path, const engine::LearnerStats& s, double elapsed) {
  const double value = cfg_.topology.eval_envs_per_actor > 0 ? s.eval_return_mean : s.return_mean;
  bool kept = false;
  try {
    kept = best_->consider(path, value, s.frames);
  } catch (const std::exception& e) {
    base::log_warning(std::string(e.what()) + "; best.pt stays as it was");
  }
  engine::MetricsRow event;
  event.add("time_s", elapsed).add("event", "checkpoint").add("checkpoint", std::filesystem::path(path).filename().string());
  event.add("metric", best_->metric()).add("value", value).add("best", kept ? 1.0 : 0.0);
  metrics_->append(event);
}

}  // namespace moonseed::cli
