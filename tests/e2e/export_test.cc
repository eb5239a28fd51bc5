// `moonseed export` on real runs (docs/export.md): a short CartPole V-trace run and a short
// CartPole R2D2 run end with a checkpoint; the exported module loaded by Debian's python3-torch
// computes what the learner's net restored from that checkpoint (as --resume restores it)
// computes (R2D2: two steps, the recurrent state carried from the first into the second); and
// the errors a user can meet.
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "engine/learner/checkpoint.h"
#include "engine/learner/optimizer.h"
#include "engine/r2d2/r2d2_core.h"
#include "envs/describe.h"
#include "models/policy_net.h"
#include "models/q_net.h"
#include "scripts/loader/experiment_loader.h"
#include "tests/e2e/process.h"
#include "tests/e2e/suite_run.h"
#include "tests/models/export_check.h"

namespace moonseed::testing {
namespace {

namespace fs = std::filesystem;

const std::string kVtrace = std::string(MOONSEED_SOURCE_DIR) + "/examples/cartpole_vtrace.lua";
const std::string kR2d2 = std::string(MOONSEED_SOURCE_DIR) + "/examples/cartpole_r2d2.lua";

using Exported = Finished;

Exported run_export(const std::vector<std::string>& args, const std::string& log) {
  std::vector<std::string> argv = {"export"};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_moonseed(argv, log);
}

// One export checked against the learner: the newest checkpoint of a suite's run exported into
// RUNS_DIR/case/policy.pt, and the run's config and env spec, to build the learner's net from.
struct ExportCase {
  std::string checkpoint;
  std::string dir;
  engine::ExperimentConfig config;
  envs::EnvSpec spec;
};

ExportCase export_newest(const TrainingRun& run, const std::string& run_dir, const std::string& checkpoint,
                         const std::string& algo) {
  ExportCase c{checkpoint, run.runs_dir + "/case", {}, {}};
  EXPECT_FALSE(checkpoint.empty()) << read_file(run.log);
  fs::create_directories(c.dir);
  const Exported e = run_export({run_dir, "-o", c.dir + "/policy.pt"}, run.runs_dir + "/export.log");
  EXPECT_EQ(e.exit_code, std::optional<int>(0)) << e.output;
  EXPECT_TRUE(contains(e.output, "wrote " + c.dir + "/policy.pt (" + algo + " on CartPole-v1, " +
                                     fs::path(checkpoint).filename().string()))
      << e.output;
  c.config = scripts::load_experiment(run_dir + "/config.lua");
  c.spec = envs::describe_env(c.config.env.id, c.config.env.options, {}).spec;
  return c;
}

// One short run for every test of the suite: it ends on stop.frames and writes its final checkpoint.
class ExportRun : public SuiteRun<ExportRun> {
 protected:
  static void SetUpTestSuite() {
    start(kVtrace, {"stop.frames=6000", "log.progress=false", "checkpoint.keep=10"}, "moonseed-export");
    run_until_it_ends();
  }
  static std::string run_dir() { return dir_; }
};

TEST_F(ExportRun, PyTorchComputesWhatTheLearnerRestoredFromTheSameCheckpointComputes) {
  const ExportCase c = export_newest(*run_, run_dir(), newest_checkpoint(), "vtrace");
  const std::string& checkpoint = c.checkpoint;
  const std::string& case_dir = c.dir;
  const engine::ExperimentConfig& config = c.config;

  // The learner's net as --resume restores it: the run's config, its optimizer, load_checkpoint.
  models::PolicyNet net(config.model, c.spec);
  auto optimizer = engine::make_optimizer(config.optimizer, net->parameters());
  engine::load_checkpoint(checkpoint, *net, *optimizer);
  torch::manual_seed(5);
  const torch::Tensor obs = torch::randn({16, 4});
  torch::NoGradGuard no_grad;
  const models::PolicyOutput out = net->forward(obs);
  write_tensors(case_dir + "/data.pt", {{"obs", obs}, {"out", out.logits_or_mean}, {"value", out.value}});
  const CheckResult check = run_export_check({case_dir}, run_->runs_dir + "/check.log");
  EXPECT_EQ(check.exit_code, 0) << check.output;
  EXPECT_TRUE(contains(check.output, case_dir + ": OK (vtrace CartPole-v1")) << check.output;
}

TEST_F(ExportRun, ErrorsSayWhatIsWrongExitNonZeroAndWriteNothing) {
  const std::string dir = run_dir();
  const std::string out = run_->runs_dir + "/errors";
  fs::create_directories(out);

  // A checkpoint that is not there: the ones that are are listed.
  const std::string newest = fs::path(newest_checkpoint()).filename().string();
  const std::string step = newest.substr(5, newest.size() - 8);
  Exported e = run_export({dir, "--checkpoint", "999999", "-o", out + "/p.pt"}, out + "/missing_n.log");
  EXPECT_EQ(e.exit_code, std::optional<int>(1)) << e.output;
  EXPECT_TRUE(contains(e.output, "has no checkpoint 999999 (checkpoints there: ")) << e.output;
  EXPECT_TRUE(contains(e.output, step + ")")) << e.output;

  // --checkpoint N picks that one.
  e = run_export({dir, "--checkpoint", step, "-o", out + "/n.pt"}, out + "/n.log");
  EXPECT_EQ(e.exit_code, std::optional<int>(0)) << e.output;
  EXPECT_TRUE(fs::is_regular_file(out + "/n.pt"));

  // An output file that cannot be written: nothing is left there.
  e = run_export({dir, "-o", out + "/no/such/dir/p.pt"}, out + "/unwritable.log");
  EXPECT_EQ(e.exit_code, std::optional<int>(1)) << e.output;
  EXPECT_TRUE(contains(e.output, "cannot create " + out + "/no/such/dir/p.pt.partial: No such file or directory"))
      << e.output;

  // A run directory without checkpoints.
  const std::string empty_run = run_->runs_dir + "/no-checkpoints";
  fs::create_directories(empty_run + "/checkpoints");
  fs::copy_file(dir + "/config.lua", empty_run + "/config.lua");
  e = run_export({empty_run, "-o", out + "/p.pt"}, out + "/no_checkpoint.log");
  EXPECT_EQ(e.exit_code, std::optional<int>(1)) << e.output;
  EXPECT_TRUE(contains(e.output, empty_run + " has no checkpoint to export")) << e.output;

  // A checkpoint of another model shape: the run's config asks for wider layers.
  const std::string other = run_->runs_dir + "/other-shape";
  fs::create_directories(other + "/checkpoints");
  fs::copy_file(newest_checkpoint(), other + "/checkpoints/" + newest);
  const std::string config = read_file(dir + "/config.lua");
  ASSERT_TRUE(contains(config, "hidden = {64, 64}")) << config;
  std::ofstream(other + "/config.lua") << replaced(config, "hidden = {64, 64}", "hidden = {32, 32}");
  e = run_export({other, "-o", out + "/p.pt"}, out + "/other_shape.log");
  EXPECT_EQ(e.exit_code, std::optional<int>(1)) << e.output;
  EXPECT_TRUE(contains(e.output, "does not fit this model")) << e.output;

  EXPECT_FALSE(fs::exists(out + "/p.pt"));
  EXPECT_FALSE(fs::exists(out + "/p.pt.partial"));
}

// A Python env (env.python) with CartPole's spaces whose factory appends a line to built.txt,
// beside its module, each time it builds an env: one describe, one line.
const char* const kCountedEnv = R"(import os
import numpy as np


class Box:
    def __init__(self, size):
        self.shape, self.dtype = (size,), np.dtype(np.float32)
        self.low, self.high = np.full(size, -5, np.float32), np.full(size, 5, np.float32)


class Discrete:
    def __init__(self, n):
        self.n = n


class Still:
    """Zeros for 5 steps."""

    def __init__(self):
        self.observation_space, self.action_space, self.t = Box(4), Discrete(2), 0

    def reset(self, seed=None, options=None):
        self.t = 0
        return np.zeros(4, np.float32), {}

    def step(self, action):
        self.t += 1
        return np.zeros(4, np.float32), 1.0, self.t >= 5, False, {}


def make_env():
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "built.txt"), "a") as f:
        f.write("built\n")
    return Still()
)";

// export and eval load config.lua, whose loader describes the env (a Python env by a child
// process), and use that spec: the env is described once per command, not again for the net.
TEST_F(ExportRun, ExportAndEvalDescribeAPythonEnvOnce) {
  const std::string other = run_->runs_dir + "/python-env";
  const std::string checkpoint = newest_checkpoint();
  fs::create_directories(other + "/checkpoints");
  fs::copy_file(checkpoint, other + "/checkpoints/" + fs::path(checkpoint).filename().string());
  std::ofstream(other + "/counted.py") << kCountedEnv;
  std::string config = read_file(dir_ + "/config.lua");
  config = replaced(config, "id = \"CartPole-v1\"", "id = \"Counted-v0\"");
  config = replaced(config, "python = \"\"", "python = \"counted:make_env\"");
  config = replaced(config, "python_path = \"\"", "python_path = \"" + other + "\"");
  std::ofstream(other + "/config.lua") << config;
  const std::string built = other + "/built.txt";

  const Exported e = run_export({other, "-o", other + "/policy.pt"}, other + "/export.log");
  ASSERT_EQ(e.exit_code, std::optional<int>(0)) << e.output;
  EXPECT_TRUE(contains(e.output, "(vtrace on Counted-v0, ")) << e.output;
  EXPECT_EQ(read_file(built), "built\n");

  // eval describes it once too, then refuses to play it (Python envs run only in actors).
  fs::remove(built);
  const Finished o = run_moonseed({"eval", other, "--episodes", "1"}, other + "/eval.log");
  EXPECT_EQ(o.exit_code, std::optional<int>(1)) << o.output;
  EXPECT_TRUE(contains(o.output, "env.python = \"counted:make_env\"")) << o.output;
  EXPECT_EQ(read_file(built), "built\n");
}

// A short CartPole R2D2 run: a small replay that fills at once (as tests/e2e/r2d2_test.cc), so
// the run has trained when it ends on stop.frames with its final checkpoint.
class ExportR2d2Run : public SuiteRun<ExportR2d2Run> {
 protected:
  static void SetUpTestSuite() {
    start(kR2d2, {"stop.frames=6000", "stop.eval_return_mean=0", "r2d2.min_fill=64", "r2d2.capacity=1000",
                  "log.progress=false"},
          "moonseed-export-r2d2");
    run_until_it_ends();
  }
};

// The two nets of an R2D2 checkpoint as the learner saves and restores them: "online.*" and
// "target.*", with the optimizer over the online net's parameters.
struct R2d2Nets : torch::nn::Module {
  R2d2Nets(const models::QNetSpec& spec, const envs::EnvSpec& env)
      : online(register_module("online", models::QNet(spec, env))),
        target(register_module("target", models::QNet(spec, env))) {}
  models::QNet online;
  models::QNet target;
};

TEST_F(ExportR2d2Run, PyTorchComputesWhatTheLearnerRestoredFromTheSameCheckpointComputesOverTwoSteps) {
  const ExportCase c = export_newest(*run_, dir_, newest_checkpoint(), "r2d2");
  const std::string& checkpoint = c.checkpoint;
  const std::string& case_dir = c.dir;
  const engine::ExperimentConfig& config = c.config;

  // The learner's nets as --resume restores them: the run's config, its optimizer, load_checkpoint.
  R2d2Nets nets(engine::r2d2_net_spec(config), c.spec);
  auto optimizer = engine::make_optimizer(config.optimizer, nets.online->parameters());
  const engine::Counters counters = engine::load_checkpoint(checkpoint, nets, *optimizer);
  EXPECT_GT(counters.optimizer_steps, 0) << "the run ended before it trained: " << read_file(run_->log);
  ASSERT_GT(nets.online->state_size(), 0);  // the recipe's LSTM: a state to carry

  // Two steps of 4 envs: -1 marks an episode's first step (no previous action); the state
  // of the first step goes into the second.
  torch::manual_seed(7);
  const int64_t B = 4;
  const torch::Tensor obs1 = torch::randn({B, 4}), obs2 = torch::randn({B, 4});
  const torch::Tensor a1 = torch::tensor({-1, 0, 1, -1}, torch::kInt64), a2 = torch::tensor({1, -1, 0, 1}, torch::kInt64);
  const torch::Tensor r1 = torch::tensor({0.0f, 1.0f, 1.0f, 0.0f}), r2 = torch::tensor({1.0f, 0.0f, 1.0f, 1.0f});
  torch::NoGradGuard no_grad;
  const models::QNetImpl::State s0 = nets.online->initial_state(B);
  const auto [q1, s1] = nets.online->step(obs1, a1, r1, s0);
  const auto [q2, s2] = nets.online->step(obs2, a2, r2, s1);
  write_tensors(case_dir + "/data.pt", {{"obs1", obs1}, {"prev_action1", a1}, {"prev_reward1", r1},
                                        {"obs2", obs2}, {"prev_action2", a2}, {"prev_reward2", r2},
                                        {"q1", q1}, {"q2", q2}, {"h0", s0.h}, {"c0", s0.c},
                                        {"h2", s2.h}, {"c2", s2.c}});
  const CheckResult check = run_export_check({case_dir}, run_->runs_dir + "/check.log");
  EXPECT_EQ(check.exit_code, 0) << check.output;
  EXPECT_TRUE(contains(check.output, case_dir + ": OK (r2d2 CartPole-v1")) << check.output;
}

}  // namespace
}  // namespace moonseed::testing
