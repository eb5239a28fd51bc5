#include "cli/engine/run_report.h"

#include <algorithm>
#include <vector>

#include "cli/engine/progress.h"

namespace moonseed::cli {

std::string stop_reason(const engine::StopConfig& stop, const engine::LearnerStats& s, double wall_s) {
  // Means over fewer than 100 episodes are too noisy to stop on.
  constexpr int64_t kMinEpisodes = 100;
  if (stop.frames > 0 && s.frames >= stop.frames) return "reached stop.frames = " + std::to_string(stop.frames);
  if (stop.seconds > 0 && s.train_s >= stop.seconds) return "reached stop.seconds = " + format_number(stop.seconds);
  if (stop.wall_seconds > 0 && wall_s >= stop.wall_seconds) {
    return "reached stop.wall_seconds = " + format_number(stop.wall_seconds) + " (" + format_number(s.train_s) +
           " s of it training)";
  }
  // The env's own return unless stop.on_shaped_return.
  const bool shaped = stop.on_shaped_return;
  const double ret = shaped ? s.shaped_return_mean : s.return_mean;
  // Which episodes the figure is of: the summary's return_mean is of the last
  // 100 at the end, after the episodes that ended during the stop.
  const auto window = [&](const char* which) {
    return std::string(" (the last 100 ") + which + ", at frame " + std::to_string(s.frames) + ")";
  };
  if (stop.return_mean != 0 && s.episodes >= kMinEpisodes && ret >= stop.return_mean) {
    return std::string(shaped ? "shaped_return_mean " : "return_mean ") + format_number(ret) +
           " >= stop.return_mean = " + format_number(stop.return_mean) + window("episodes");
  }
  const double eval_ret = shaped ? s.eval_shaped_return_mean : s.eval_return_mean;
  if (stop.eval_return_mean != 0 && s.eval_episodes >= kMinEpisodes && eval_ret >= stop.eval_return_mean) {
    return std::string(shaped ? "eval_shaped_return_mean " : "eval_return_mean ") + format_number(eval_ret) +
           " >= stop.eval_return_mean = " + format_number(stop.eval_return_mean) + window("evaluation episodes");
  }
  return "";
}

void add_counters(engine::MetricsRow& row, const engine::LearnerStats& s, bool eval_envs) {
  row.add("frames", s.frames).add("episodes", s.episodes).add("return_mean", s.return_mean);
  if (s.reward_shaping) row.add("shaped_return_mean", s.shaped_return_mean);
  row.add("length_mean", s.length_mean).add("optimizer_steps", s.optimizer_steps)
      .add("trained_frames", s.trained_frames).add("train_time_s", s.train_s).add("loss_total", s.loss_total)
      .add("grad_norm", s.grad_norm).add("learning_rate", s.learning_rate)
      .add("actors", s.actors_connected).add("auth_failures", s.auth_failures).add("queue", s.queue_size)
      .add("inference_batch_envs", s.mean_batch_envs).add("nonfinite_replaced", s.nonfinite_replaced);
  if (eval_envs) row.add("eval_episodes", s.eval_episodes).add("eval_return_mean", s.eval_return_mean);
  if (eval_envs && s.reward_shaping) row.add("eval_shaped_return_mean", s.eval_shaped_return_mean);
  // The algorithm's own numbers (V-trace: loss_policy, mean_rho, ...; R2D2: mean_q, replay_size, ...).
  for (const engine::Metric& m : s.agent_metrics) row.add(m.name, m.value);
  if (s.record) {
    const engine::RecorderStats& r = *s.record;
    const double disk = static_cast<double>(r.writer.bytes_disk);
    row.add("record_steps", r.recorded_steps).add("record_dropped_steps", r.dropped_steps)
        .add("record_unrecorded_steps", r.unrecorded_steps)
        .add("record_durable_records", static_cast<double>(r.writer.durable_records))
        .add("record_disk_mb", disk / (1 << 20))
        .add("record_cpu_s", r.cpu_seconds)
        .add("record_ratio", r.writer.bytes_disk ? static_cast<double>(r.writer.bytes_raw) / disk : 0.0);
  }
}

std::string checkpoint_and_prune(const engine::RunDirectory& dir, int64_t step, int keep, const SaveCheckpoint& save) {
  const std::string path = dir.checkpoint_path(step);
  save(path);
  dir.prune_checkpoints(keep);
  return path;
}

engine::MetricsRow counters_row(const engine::LearnerStats& s, const engine::ExperimentConfig& cfg, double elapsed,
                                double fps, int actor_restarts, const SlotCounts& slots) {
  engine::MetricsRow row;
  row.add("time_s", elapsed).add("fps", fps);
  add_counters(row, s, cfg.topology.eval_envs_per_actor > 0);
  // The version the training thread has applied: the rows' numbers are its.
  row.add("actor_restarts", actor_restarts).add("config_version", static_cast<double>(s.applied_config_version))
      .add("actor_deaths", slots.deaths).add("actors_backing_off", slots.backing_off)
      .add("actors_parked", slots.parked);
  return row;
}

namespace {

double mean_of(const std::vector<double>& v) {
  double sum = 0;
  for (double x : v) sum += x;
  return v.empty() ? 0 : sum / static_cast<double>(v.size());
}

}  // namespace

std::string final_eval_text(const engine::Evaluation& e, const std::string& policy) {
  if (e.returns.empty()) return "final policy: no evaluation episode";
  const auto [lo, hi] = std::minmax_element(e.returns.begin(), e.returns.end());
  return "final policy: return_mean " + format_number(mean_of(e.returns)) + " over " +
         std::to_string(e.returns.size()) + " evaluation episode" + (e.returns.size() == 1 ? "" : "s") + " (" +
         policy + "; min " + format_number(*lo) + ", max " + format_number(*hi) + ")";
}

void add_final_eval(engine::MetricsRow& row, const engine::Evaluation& e) {
  row.add("final_eval_return_mean", mean_of(e.returns)).add("final_eval_episodes", static_cast<double>(e.returns.size()));
}

std::string checkpoint_and_prune(const engine::RunDirectory& dir, int keep, const SaveNumberedCheckpoint& save) {
  const std::string path = save([&](int64_t step) { return dir.checkpoint_path(step); });
  dir.prune_checkpoints(keep);
  return path;
}

}  // namespace moonseed::cli
