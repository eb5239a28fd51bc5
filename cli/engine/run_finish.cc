// How a run ends (cli/engine/run.h finish()): Bye to the actors, the learner's threads, the final
// checkpoint, the group's end, the final policy's evaluation, the stop row and the summary.
//
// The evaluation (stop.final_eval_episodes) says what a user got. The training figure
// (return_mean) is a window of the last 100 episodes, sampled while the weights changed under
// them; these episodes are played by the final weights alone, on fresh envs seeded as `moonseed
// eval` seeds them: `moonseed eval RUN_DIR` of the final checkpoint plays the same envs again
// (with sampled actions, not the same actions).
#include <chrono>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <iostream>

#include "base/text.h"
#include "cli/engine/learner_group.h"
#include "cli/engine/local_actors.h"
#include "cli/engine/progress.h"
#include "cli/engine/run.h"
#include "cli/engine/run_report.h"
#include "cli/engine/tensorboard_sink.h"
#include "curves/metrics_row.h"
#include "engine/group/c10d_group.h"
#include "engine/learner/agent_registry.h"
#include "engine/learner/learner.h"
#include "rpc/server.h"

namespace moonseed::cli {

int Run::finish() {
  progress_->finish();
  if (group_ && !group_failed_) {
    // Every rank ends at the same round while its actors still feed it; a rank
    // starved of data meets the others when its learner stops below.
    learner_->request_group_stop();
  }
  // Bye to the actors, then stop the learner's threads, then the final
  // checkpoint: it holds every step trained, so a resume loses nothing.
  actors_->stop_restarting();  // their exit after the Bye is expected
  learner_->expect_actors_to_leave();
  server_->stop();
  actors_->shutdown(5.0);
  learner_->stop();
  // The time the final checkpoint holds and the stop row shows, so that a
  // resumed run's rows go on from the last row of this one.
  const double elapsed = elapsed_s();
  const engine::LearnerStats own_stats = learner_->stats();
  double final_fps = (own_stats.frames - last_frames_) / std::max(1e-9, t0_ + elapsed - last_tick_);
  engine::MetricsRow group_columns;
  // A group's rank 0: the group's counters, and each rank's columns.
  const engine::LearnerStats final_stats = group_ ? run_stats(final_fps, &group_columns, &final_fps) : own_stats;
  report_record_off(final_stats, elapsed);  // the last segment may have failed at the stop
  int code = 0;
  try {
    if (rank() > 0) {
      // Rank 0's checkpoint holds the group's weights, equal on every rank; this
      // rank's part of the last step is there already after a clean stop (the
      // group's last round), and written now after a failure.
      learner_->save_rank_part();
    } else if (diverged_) {
      // Weights that are NaN would be the newest checkpoint, the one --resume takes.
      const std::string newest = dir_->newest_checkpoint(learner_->checkpoint_companions());
      std::cerr << "moonseed: no final checkpoint: the model's weights are not finite; "
                << (newest.empty() ? "there is no checkpoint to resume from" : "the last good one is " + newest)
                << "\n";
      code = 1;
    } else {
      checkpoint(elapsed, final_stats);
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
  if (group_) {
    group_->leave(/*wait_for_others=*/!group_failed_);
    if (local_ranks_) {
      const std::vector<int> codes = local_ranks_->wait(cfg_.topology.group_timeout_s);
      for (size_t i = 0; i < codes.size(); ++i) {
        if (codes[i] != 0) {
          std::cerr << "moonseed: learner rank " << i + 1
                    << (codes[i] < 0 ? std::string(" ended without an exit code (killed)")
                                     : " exited with code " + std::to_string(codes[i]))
                    << " (see " << dir_->path() << "/ranks/" << i + 1 << "/run.log)\n";
        }
      }
    }
  }
  if (group_failed_) code = 3;
  // After the group has ended: no rank waits for rank 0's episodes.
  evaluate_final_policy();
  if (rank() > 0) {
    // For a rank 0 on this host whose other child reaper may have taken this process's status.
    try {
      dir_->write_file_atomic("exit_code", std::to_string(code) + "\n");
    } catch (const std::exception&) {
    }
  }
  // The last row: every counter once nothing runs any more (steps the actors
  // made and episodes they ended during the stop are in it, and in the
  // experience log, but in no earlier row).
  engine::MetricsRow stop_row =
      counters_row(final_stats, cfg_, elapsed, final_fps, actors_->restarts(), count_slots(actors_->slots()));
  for (const auto& [key, json] : group_columns.fields()) stop_row.add_json(key, json);
  if (final_eval_) add_final_eval(stop_row, *final_eval_);
  // Marked as a point of every metric it has (curves::is_point: plot, dashboard, TensorBoard).
  stop_row.add("event", "stop").add_json(curves::kCountersKey, "true").add("reason", stop_reason_);
  if (group_) {
    // Equal on every rank that ended at the group's last round: the check a reader can repeat.
    char hash[24];
    std::snprintf(hash, sizeof hash, "%016llx", static_cast<unsigned long long>(learner_->weights_hash()));
    stop_row.add("rank", rank()).add("weights_hash", std::string(hash));
    std::cerr << "moonseed: learner rank " << rank() << ": weights hash " << hash << " after "
              << final_stats.optimizer_steps << " optimizer steps\n";
  }
  // The stop row is the run's record of its end (the counters a resume and the
  // curves go on from): a disk that is full right now gets half a minute to free
  // up, unless a signal stopped the run (a user who wants out).
  constexpr std::chrono::seconds kStopRowPatience(30);
  const bool stop_row_written =
      metrics_->append_patiently(stop_row, signaled_ ? std::chrono::seconds(0) : kStopRowPatience, [&] {
        std::cerr << "moonseed: cannot write the stop row to metrics.jsonl (is the disk full?); trying again for up "
                     "to " << kStopRowPatience.count() << " s\n";
      });
  if (!stop_row_written) std::cerr << "moonseed: the stop row was not written to metrics.jsonl\n";
  if (tensorboard_) tensorboard_->flush();
  print_summary(final_stats, elapsed);
  return code;
}

void Run::print_summary(const engine::LearnerStats& s, double elapsed_s) const {
  std::cerr << "moonseed: stopped: " << stop_reason_ << "\n"
            << "moonseed: " << format_number(elapsed_s) << " s, " << s.frames << " frames, " << s.episodes
            << " episodes, return_mean " << format_number(s.return_mean)
            << (s.reward_shaping ? " (shaped " + format_number(s.shaped_return_mean) + ")" : std::string())
            << " over the last 100 episodes, "
            << s.optimizer_steps
            << " optimizer steps\n";
  if (final_eval_) std::cerr << "moonseed: " << final_eval_text(*final_eval_, final_eval_policy_) << "\n";
  std::cerr << "moonseed: run directory " << dir_->path() << "\n";
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

void Run::evaluate_final_policy() {
  const engine::ExperimentConfig& c = cfg_;
  // Not for a user who stopped it (Ctrl-C), nor after a failure, nor on a rank past 0 (rank 0's
  // weights are the group's), nor for envs the learner's process does not run (plugins, Python:
  // engine::play_episodes refuses them; their actors report the training returns).
  if (c.stop.final_eval_episodes <= 0 || signaled_ || diverged_ || actors_failed_ || group_failed_ || rank() > 0 ||
      !c.env.plugin.empty() || !c.env.python.empty()) {
    return;
  }
  // As the run's evaluation envs act (the algorithm says how: engine/learner/agent_registry.h).
  const engine::EvalActing acting = engine::eval_acting(c);
  const bool greedy = acting.greedy;
  final_eval_policy_ = acting.text;
  try {
    // Episodes end as `moonseed eval`'s do: at the env's end or its time limit, else after 100k steps.
    final_eval_ = learner_->evaluate(c.stop.final_eval_episodes, 1000000007ull + c.seed, greedy);
  } catch (const std::exception& e) {
    std::cerr << "moonseed: final evaluation failed: " << e.what() << "\n";
  }
}

}  // namespace moonseed::cli
