// CartPole V-trace training throughput of the whole system against its
// ceiling, measured in one run:
//   ceiling: the learner's training step alone (same model, batch, unroll,
//            optimizer and torch threads as the script), on synthetic batches;
//   system:  `moonseed run SCRIPT` with its actor processes, frames trained per
//            second over the steady part of the run (after the first 2 s).
// Usage: throughput_bench [SCRIPT=examples/cartpole_vtrace.lua] [seconds=10] [key=value...]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "engine/config/experiment_config.h"
#include "engine/learner/optimizer.h"
#include "engine/learner/unroll_batch.h"
#include "engine/vtrace/config/vtrace_config.h"
#include "engine/vtrace/vtrace_loss.h"
#include "envs/env.h"
#include "models/policy_net.h"
#include "scripts/loader/experiment_loader.h"
#include "tests/e2e/process.h"

namespace {

using Clock = std::chrono::steady_clock;
namespace engine = moonseed::engine;

engine::UnrollBatch synthetic_batch(const engine::ExperimentConfig& cfg, const moonseed::envs::EnvSpec& spec) {
  const int64_t T = cfg.learner.unroll, B = cfg.learner.batch;
  engine::UnrollBatch b;
  b.observations = torch::randn({T + 1, B, spec.observation.numel()});
  b.actions = torch::randint(0, spec.action.n, {T + 1, B}, torch::kInt64);
  b.behaviour_logp = torch::full({T + 1, B}, -0.69f);
  b.rewards = torch::ones({T + 1, B});
  b.terminated = torch::zeros({T + 1, B});
  b.truncated = torch::zeros({T + 1, B});
  b.valid = torch::ones({T + 1, B});
  b.policy_version = torch::zeros({T + 1, B}, torch::kInt64);
  b.frames = T * B;
  return b;
}

// Trained frames per second of the bare training step.
double training_ceiling(const engine::ExperimentConfig& cfg, double seconds) {
  auto spec = moonseed::envs::make_env(cfg.env.id, cfg.env.options, {cfg.env.model})->spec();
  at::set_num_threads(std::max(1, cfg.learner.torch_threads));
  moonseed::models::PolicyNet model(cfg.model, spec);
  auto optimizer = engine::make_optimizer(cfg.optimizer, model->parameters());
  auto params = model->parameters();
  engine::UnrollBatch batch = synthetic_batch(cfg, spec);
  auto step = [&] {
    auto loss = engine::vtrace_loss(model, batch, cfg.section<engine::VTraceConfig>());
    optimizer->zero_grad();
    loss.total.backward();
    engine::clip_grad_norm(params, cfg.optimizer.max_grad_norm);
    optimizer->step();
  };
  for (int i = 0; i < 20; ++i) step();
  int64_t steps = 0;
  auto start = Clock::now();
  double elapsed = 0;
  while (elapsed < seconds) {
    step();
    ++steps;
    elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  }
  return static_cast<double>(steps * batch.frames) / elapsed;
}

}  // namespace

int run_bench(int argc, char** argv) {
  const std::string script = argc > 1 ? argv[1] : std::string(MOONSEED_SOURCE_DIR) + "/examples/cartpole_vtrace.lua";
  const double seconds = argc > 2 ? std::stod(argv[2]) : 10;
  const std::vector<std::string> overrides(argv + std::min(argc, 3), argv + argc);
  engine::ExperimentConfig cfg = moonseed::scripts::load_experiment(script, overrides);

  std::printf("throughput_bench: %s, %d actors x %d envs, batch %d x unroll %d\n", script.c_str(),
              cfg.topology.actors, cfg.topology.envs_per_actor, cfg.learner.batch, cfg.learner.unroll);
  // The ceiling is measured before and after the system run and averaged, so
  // that a machine that speeds up or slows down midway biases neither side.
  const double ceiling_before = training_ceiling(cfg, 2.0);

  const std::string runs = moonseed::testing::make_temp_dir("moonseed-bench");
  std::vector<std::string> argv_run = {MOONSEED_BINARY, "run", script, "runs_dir=" + runs, "stop.return_mean=0",
                                       "stop.seconds=" + std::to_string(seconds), "log.interval_s=0.5", "--quiet"};
  argv_run.insert(argv_run.end(), overrides.begin(), overrides.end());
  moonseed::testing::ChildProcess run(argv_run, runs + "/learner.log");
  if (run.wait(seconds + 120) != std::optional<int>(0)) {
    std::fprintf(stderr, "moonseed run failed:\n%s\n", moonseed::testing::read_file(runs + "/learner.log").c_str());
    return 1;
  }
  auto dirs = moonseed::testing::list_dirs(runs);
  auto rows = moonseed::testing::read_metrics(dirs.at(0) + "/metrics.jsonl");
  const moonseed::testing::MetricsRow* first = nullptr;
  const moonseed::testing::MetricsRow* last = nullptr;
  for (const auto& r : rows) {
    if (r.count("event")) continue;  // reloads, notices, the final stop row
    if (!first && r.at("time_s") >= 2.0) first = &r;
    last = &r;
  }
  if (!first || !last || last == first) {
    std::fprintf(stderr, "run too short to measure\n");
    return 1;
  }
  const double ceiling_after = training_ceiling(cfg, 2.0);
  const double ceiling = 0.5 * (ceiling_before + ceiling_after);
  const double dt = last->at("time_s") - first->at("time_s");
  const double trained = (last->at("trained_frames") - first->at("trained_frames")) / dt;
  const double acted = (last->at("frames") - first->at("frames")) / dt;

  std::printf("%-44s %12s\n", "", "frames/s");
  std::printf("%-44s %12.0f   (before %.0f, after %.0f)\n", "ceiling: training step alone", ceiling,
              ceiling_before, ceiling_after);
  std::printf("%-44s %12.0f\n", "system: frames trained (actors -> learner)", trained);
  std::printf("%-44s %12.0f\n", "system: frames acted", acted);
  std::printf("ratio system/ceiling: %.2f   (goal >= 0.60)\n", trained / ceiling);
  return 0;
}

int main(int argc, char** argv) {
  try {
    return run_bench(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "throughput_bench: %s\n", e.what());
    return 1;
  }
}
