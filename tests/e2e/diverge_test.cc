// A real `moonseed run` whose model has diverged (its weights are NaN, as a
// learning rate far too high leaves them): the run stops with the reason,
// exits 1 and writes no checkpoint of those weights (docs/reliability.md
// "A model that diverges").
#include <algorithm>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "engine/learner/checkpoint.h"
#include "engine/run/checkpoint_manifest.h"
#include "engine/learner/learner.h"
#include "engine/learner/optimizer.h"
#include "envs/env.h"
#include "models/policy_net.h"
#include "scripts/loader/experiment_loader.h"
#include "tests/e2e/checkpoint_files.h"
#include "tests/e2e/process.h"

namespace moonseed::testing {
namespace {

const std::string kBinary = MOONSEED_BINARY;
const std::string kVtrace = std::string(MOONSEED_SOURCE_DIR) + "/examples/cartpole_vtrace.lua";

// Writes `path`: the counters of `good` (a checkpoint of `run_dir`) one step
// on, and a model whose every weight is NaN; sealed by its manifest, as the
// learner would have written it.
void write_diverged_checkpoint(const std::string& run_dir, const std::string& good, const std::string& path) {
  const engine::ExperimentConfig config = scripts::load_experiment(run_dir + "/config.lua");
  engine::Counters counters = engine::Learner(config, "diverge-test").restore(good);
  counters.optimizer_steps += 1;
  models::PolicyNet net(config.model, envs::make_env(config.env.id, config.env.options)->spec());
  {
    torch::NoGradGuard no_grad;
    for (torch::Tensor& p : net->parameters()) p.fill_(std::numeric_limits<float>::quiet_NaN());
  }
  auto optimizer = engine::make_optimizer(config.optimizer, net->parameters());
  engine::save_checkpoint(path, *net, *optimizer, counters);
  engine::seal_checkpoint(path, {});
}

TEST(Diverged, ARunWhoseModelIsNanStopsWithTheReasonAndExitsOne) {
  TrainingRun run(kVtrace, {"log.interval_s=0.25", "stop.return_mean=0", "log.progress=false"}, "moonseed-diverge");
  ChildProcess first(run.args({"stop.frames=5000"}), run.log);
  ASSERT_EQ(first.wait(120), std::optional<int>(0)) << read_file(run.log);
  const std::string dir = run.run_dir() + "/checkpoints";
  const std::vector<std::string> good = file_names(dir);
  const std::vector<std::string> checkpoints = checkpoint_paths(run.run_dir());
  ASSERT_FALSE(checkpoints.empty());
  const int64_t step = checkpoint_step(std::filesystem::path(checkpoints.back()).filename().string());
  const std::string diverged = dir + "/ckpt-" + std::to_string(step + 1) + ".pt";
  write_diverged_checkpoint(run.run_dir(), checkpoints.back(), diverged);
  const auto written = std::filesystem::last_write_time(diverged);

  // The resumed run acts with NaN weights at its first step.
  const std::string log = run.runs_dir + "/resume.log";
  ChildProcess resumed({kBinary, "run", "--resume", run.run_dir(), kUntilStopped}, log);
  ASSERT_EQ(resumed.wait(120), std::optional<int>(1)) << read_file(log);
  const std::string out = read_file(log);
  EXPECT_NE(out.find("the model's outputs went non-finite at optimizer step " + std::to_string(step + 1)),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("lower optimizer.lr"), std::string::npos) << out;
  EXPECT_NE(out.find("moonseed: no final checkpoint: the model's weights are not finite"), std::string::npos) << out;
  EXPECT_NE(out.find("moonseed: stopped: the model's outputs went non-finite"), std::string::npos) << out;
  const std::vector<MetricsLine> stops = events(read_metrics_lines(run.run_dir() + "/metrics.jsonl"), "stop");
  ASSERT_EQ(stops.size(), 2u);
  EXPECT_NE(stops.back().text.find("went non-finite"), std::string::npos) << stops.back().text;
  // Nothing was written over or beside the checkpoints.
  std::vector<std::string> expected = good;
  expected.push_back("ckpt-" + std::to_string(step + 1) + ".pt");
  expected.push_back("ckpt-" + std::to_string(step + 1) + ".pt.sum");
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(file_names(dir), expected);
  EXPECT_EQ(std::filesystem::last_write_time(diverged), written);
}

}  // namespace
}  // namespace moonseed::testing
