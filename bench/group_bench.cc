// Learner groups (docs/performance.md "Learner groups"), two measures, each a
// ratio against a baseline measured in the same run:
//
// 1. The gradient all-reduce's share of a training step, for the CartPole MLP
//    and the MinAtar conv net at N = 2: a training step's forward, backward
//    and optimizer step on a batch of the example's size, timed alone, and the
//    all-reduce of its gradients (C10dGroup::average_gradients, two ranks as
//    two threads of this process over a FileStore and Gloo on 127.0.0.1).
// 2. Frames trained per second by real runs of examples/cartpole_vtrace.lua
//    with topology.learners = 1 and = 2, alternated (trained_frames /
//    train_time_s of each run's stop row).
//
// usage: group_bench [--skip-runs] [--frames N]
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <future>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "bench/bench_util.h"
#include "engine/group/c10d_group.h"
#include "engine/learner/learner.h"
#include "models/policy_net.h"
#include "scripts/loader/experiment_loader.h"
#include "tests/e2e/process.h"

namespace moonseed::bench {
namespace {

const std::string kSource = MOONSEED_SOURCE_DIR;

struct StepCost {
  double step_s = 0;       // forward, backward, optimizer step
  double allreduce_s = 0;  // the gradients' all-reduce over 2 ranks
  int64_t parameters = 0;
};

// One training step of `model` on `batch` observations: what the all-reduce is measured against.
double step_seconds(models::PolicyNet& model, torch::optim::Optimizer& opt, const torch::Tensor& obs) {
  std::vector<double> rounds;
  for (int r = 0; r < 5; ++r) {
    rounds.push_back(per_call(0.4, 1, [&] {
      opt.zero_grad();
      const models::PolicyOutput out = model->forward(obs);
      // The V-trace loss's shape: log-softmax over the logits, squared values.
      (torch::log_softmax(out.logits_or_mean, -1).mean() + out.value.pow(2).mean()).backward();
      opt.step();
    }));
  }
  return fastest(rounds);
}

StepCost measure(const std::string& example) {
  const engine::ExperimentConfig cfg = scripts::load_experiment(kSource + "/examples/" + example, {});
  const envs::EnvSpec spec = engine::model_env_spec(cfg);
  at::set_num_threads(1);
  // The batch a training step sees: B unrolls of T+1 steps.
  const int64_t n = static_cast<int64_t>(cfg.learner.batch) * (cfg.learner.unroll + 1);
  std::vector<int64_t> shape = {n};
  for (int64_t d : spec.observation.shape) shape.push_back(d);
  const bool uint8_obs = spec.observation.dtype == envs::DType::kUInt8;
  const torch::Tensor obs = uint8_obs ? torch::randint(0, 2, shape, torch::kUInt8) : torch::randn(shape);

  StepCost cost;
  models::PolicyNet model(cfg.model, spec);
  torch::optim::RMSprop opt(model->parameters(), torch::optim::RMSpropOptions(1e-4));
  for (const torch::Tensor& p : model->parameters()) cost.parameters += p.numel();
  cost.step_s = step_seconds(model, opt, obs);

  // Two ranks, each with the same net's gradients: the all-reduce alone.
  const std::string store = "file:" + std::filesystem::temp_directory_path().string() + "/moonseed-group-bench-" +
                            std::to_string(::getpid()) + "-" + std::to_string(cost.parameters);
  std::filesystem::remove(store.substr(5));
  std::vector<double> per_rank(2);
  std::vector<std::future<void>> ranks;
  for (int r = 0; r < 2; ++r) {
    ranks.push_back(std::async(std::launch::async, [&, r] {
      at::set_num_threads(1);
      engine::GroupOptions o;
      o.rank = r;
      o.world_size = 2;
      o.rendezvous = store;
      o.timeout_s = 60;
      engine::C10dGroup group(o);
      models::PolicyNet net(cfg.model, spec);
      std::vector<torch::Tensor> params = net->parameters();
      for (torch::Tensor& p : params) p.mutable_grad() = torch::randn_like(p);
      // Both ranks run the same number of calls: a fixed count, not a time slice.
      for (int i = 0; i < 20; ++i) group.average_gradients(params);
      const int calls = 400;
      const auto start = Clock::now();
      for (int i = 0; i < calls; ++i) group.average_gradients(params);
      per_rank[static_cast<size_t>(r)] = std::chrono::duration<double>(Clock::now() - start).count() / calls;
      group.leave();
    }));
  }
  for (auto& f : ranks) f.get();
  cost.allreduce_s = std::max(per_rank[0], per_rank[1]);
  return cost;
}

// trained_frames / train_time_s of one CartPole run with `learners` ranks.
double trained_fps(int learners, int64_t frames) {
  const std::string dir = testing::make_temp_dir("moonseed-group-bench");
  const std::string log = dir + "/run.log";
  const testing::Finished f = testing::run_to_end(
      {MOONSEED_BINARY, "run", kSource + "/examples/cartpole_vtrace.lua", "runs_dir=" + dir + "/runs",
       "stop.seconds=0", "stop.return_mean=0", "stop.frames=" + std::to_string(frames),
       "topology.learners=" + std::to_string(learners), "log.progress=false", "--quiet"},
      log, 600);
  if (f.exit_code != std::optional<int>(0)) {
    std::fprintf(stderr, "run with %d learner(s) failed:\n%s\n", learners, f.output.c_str());
    return 0;
  }
  // Each rank's stop row counts the frames it trained on; the group trained on them all, in rank 0's time.
  const std::string run = testing::list_dirs(dir + "/runs").at(0);
  const std::vector<testing::MetricsRow> rows = testing::read_metrics(run + "/metrics.jsonl");
  double trained = testing::last(rows, "trained_frames");
  for (int rank = 1; rank < learners; ++rank) {
    trained += testing::last(testing::read_metrics(run + "/ranks/" + std::to_string(rank) + "/metrics.jsonl"),
                             "trained_frames");
  }
  return trained / std::max(1e-9, testing::last(rows, "train_time_s"));
}

}  // namespace
}  // namespace moonseed::bench

int main(int argc, char** argv) {
  using namespace moonseed::bench;
  bool runs = true;
  int64_t frames = 400000;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--skip-runs") == 0) runs = false;
    if (std::strcmp(argv[i], "--frames") == 0 && i + 1 < argc) frames = std::stoll(argv[++i]);
  }
  std::printf("Gradient all-reduce at N = 2 (Gloo over 127.0.0.1, ranks as threads), per training step:\n");
  std::printf("%-22s %10s %12s %14s %8s\n", "net", "params", "step (ms)", "all-reduce(ms)", "share");
  for (const char* example : {"cartpole_vtrace.lua", "minatar_vtrace.lua"}) {
    const StepCost c = measure(example);
    std::printf("%-22s %10lld %12.3f %14.3f %7.1f%%\n", example, static_cast<long long>(c.parameters),
                c.step_s * 1e3, c.allreduce_s * 1e3, 100.0 * c.allreduce_s / (c.step_s + c.allreduce_s));
  }
  if (!runs) return 0;
  std::printf("\nFrames trained per second, examples/cartpole_vtrace.lua, %lld frames a run, alternated:\n",
              static_cast<long long>(frames));
  std::vector<double> one, two;
  for (int round = 0; round < 2; ++round) {
    one.push_back(trained_fps(1, frames));
    two.push_back(trained_fps(2, frames));
    std::printf("  round %d: 1 learner %.0f, 2 learners %.0f frames/s\n", round + 1, one.back(), two.back());
  }
  const double best_one = *std::max_element(one.begin(), one.end());
  const double best_two = *std::max_element(two.begin(), two.end());
  std::printf("best: 1 learner %.0f, 2 learners %.0f frames/s: ratio %.2f (2 cores in all: the ranks and their "
              "actors share them)\n",
              best_one, best_two, best_two / std::max(1.0, best_one));
  return 0;
}
