// What recording every trajectory costs (docs/experience-log.md): training
// throughput of `moonseed run` with record.enabled = false and = true, runs
// alternated off/on so that a machine that drifts biases neither side, for
//   cartpole: examples/cartpole_vtrace.lua (tiny observations, ~10^5 steps/s);
//   atari:    bench/synthetic_atari.lua, SyntheticAtari-v0: 210x160x3 uint8
//             frames at an Atari step's CPU cost.
// Printed per workload: frames trained per second off and on (median over the
// rounds), their ratio, the record's bytes per step raw and on disk, and the
// compression ratio; the ratio on/off is the figure (goal: overhead <= 3%).
// Two lower-noise figures follow, since throughput on a shared VM swings by
// more than 3% from run to run: the recording threads' own CPU time as a
// share of the machine, and the CPU time of the whole run (learner and actor
// processes, from getrusage) per frame trained, on against off.
// Usage: record_bench [rounds=3] [seconds=12] [cartpole|atari|both=both]
#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_util.h"
#include "tests/e2e/process.h"

namespace {

using moonseed::bench::median;
using moonseed::testing::ChildProcess;
using moonseed::testing::MetricsRow;

struct Measure {
  double trained_fps = 0;   // over the steady part (after the first 3 s)
  double acted_fps = 0;
  double record_steps = 0;  // at the last row
  double disk_mb = 0;
  double ratio = 0;         // raw / disk
  double dropped = 0;
  double cpu_s = 0;         // the recording threads' CPU time, whole run
  double seconds = 0;       // the whole run
  double run_cpu_s = 0;     // learner and actors, user + system, whole run
  double run_trained = 0;   // frames trained, whole run (the final "stop" row)
};

double children_cpu_s() {
  rusage u{};
  ::getrusage(RUSAGE_CHILDREN, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

bool run_once(const std::string& script, double seconds, bool record, const std::vector<std::string>& extra,
              Measure* out) {
  const std::string runs = moonseed::testing::make_temp_dir("moonseed-record-bench");
  std::vector<std::string> argv = {MOONSEED_BINARY, "run", script, "runs_dir=" + runs, "stop.return_mean=0",
                                   "stop.seconds=" + std::to_string(seconds), "log.interval_s=0.5",
                                   "checkpoint.interval_s=0", "--quiet",
                                   std::string("record.enabled=") + (record ? "true" : "false")};
  argv.insert(argv.end(), extra.begin(), extra.end());
  // The learner waits for its actors, and we for the learner: all their CPU
  // time is in our RUSAGE_CHILDREN once it has exited.
  const double cpu_before = children_cpu_s();
  ChildProcess run(argv, runs + "/learner.log");
  if (run.wait(seconds + 180) != std::optional<int>(0)) {
    std::fprintf(stderr, "moonseed run failed:\n%s\n", moonseed::testing::read_file(runs + "/learner.log").c_str());
    return false;
  }
  const auto dirs = moonseed::testing::list_dirs(runs);
  const auto rows = moonseed::testing::read_metrics(dirs.at(0) + "/metrics.jsonl");
  const MetricsRow* first = nullptr;
  const MetricsRow* last = nullptr;
  for (const MetricsRow& r : rows) {
    if (r.count("event")) continue;  // reloads, notices, the final stop row
    if (!first && r.at("time_s") >= 3.0) first = &r;
    last = &r;
  }
  if (!first || !last || first == last) {
    std::fprintf(stderr, "run too short to measure\n");
    return false;
  }
  out->run_cpu_s = children_cpu_s() - cpu_before;
  out->run_trained = rows.back().count("trained_frames") ? rows.back().at("trained_frames") : 0;
  const double dt = last->at("time_s") - first->at("time_s");
  out->trained_fps = (last->at("trained_frames") - first->at("trained_frames")) / dt;
  out->acted_fps = (last->at("frames") - first->at("frames")) / dt;
  if (record) {
    out->record_steps = last->at("record_steps");
    out->disk_mb = last->at("record_disk_mb");
    out->ratio = last->at("record_ratio");
    out->dropped = last->at("record_dropped_steps");
    out->cpu_s = last->at("record_cpu_s");
    out->seconds = last->at("time_s");
  }
  std::error_code ec;
  std::filesystem::remove_all(runs, ec);
  return true;
}

const unsigned cores = std::max(1u, std::thread::hardware_concurrency());

bool workload(const char* name, const std::string& script, const std::vector<std::string>& extra, int rounds,
              double seconds) {
  std::vector<double> off, on, ratios, shares, us_per_step, cpu_ratios;
  Measure last_on;
  for (int i = 0; i < rounds; ++i) {
    Measure a, b;
    // Alternate which goes first, so a trend in the machine's speed cancels out.
    const bool on_first = i % 2 == 1;
    if (!run_once(script, seconds, on_first, extra, on_first ? &b : &a)) return false;
    if (!run_once(script, seconds, !on_first, extra, on_first ? &a : &b)) return false;
    off.push_back(a.trained_fps);
    on.push_back(b.trained_fps);
    ratios.push_back(b.trained_fps / a.trained_fps);
    last_on = b;
    shares.push_back(b.cpu_s / (b.seconds * cores));
    us_per_step.push_back(b.record_steps > 0 ? b.cpu_s * 1e6 / b.record_steps : 0);
    cpu_ratios.push_back((b.run_cpu_s / b.run_trained) / (a.run_cpu_s / a.run_trained));
    std::printf("  %-8s round %d: off %9.0f  on %9.0f frames trained/s  (on/off %.3f); "
                "CPU per frame trained on/off %.3f\n",
                name, i + 1, a.trained_fps, b.trained_fps, b.trained_fps / a.trained_fps, cpu_ratios.back());
    std::fflush(stdout);
  }
  const double disk_per_step = last_on.record_steps > 0 ? last_on.disk_mb * 1048576.0 / last_on.record_steps : 0;
  std::printf("%-8s off %9.0f  on %9.0f frames trained/s   ratio on/off %.3f (median of rounds; goal >= 0.97)\n",
              name, median(off), median(on), median(ratios));
  std::printf("%-8s %.0f bytes/step on disk, %.0f raw, compression %.2fx, %.0f steps dropped\n", name,
              disk_per_step, disk_per_step * last_on.ratio, last_on.ratio, last_on.dropped);
  // The low-noise figure: what the recording threads cost in CPU, as a share
  // of the machine (on a CPU-bound machine, the throughput it takes away).
  std::printf("%-8s recording threads: %.2f us of CPU per recorded step, %.2f%% of %u cores "
              "(median of rounds; goal <= 3%%)\n",
              name, median(us_per_step), 100 * median(shares), cores);
  std::printf("%-8s whole run (learner + actors): CPU time per frame trained, on/off %.3f "
              "(median of rounds; 1.03 = 3%% more)\n",
              name, median(cpu_ratios));
  std::fflush(stdout);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::stoi(argv[1]) : 3;
  const double seconds = argc > 2 ? std::stod(argv[2]) : 12;
  const std::string which = argc > 3 ? argv[3] : "both";
  const std::string source = MOONSEED_SOURCE_DIR;
  std::printf("record_bench: %d rounds of %.0f s runs, recording off vs on\n", rounds, seconds);
  bool ok = true;
  if (which == "cartpole" || which == "both") {
    ok = ok && workload("cartpole", source + "/examples/cartpole_vtrace.lua", {}, rounds, seconds);
  }
  if (which == "atari" || which == "both") {
    ok = ok && workload("atari", source + "/bench/synthetic_atari.lua", {}, rounds, seconds);
  }
  return ok ? 0 : 1;
}
