// `moonseed export` on a real run (docs/export.md): a short CartPole V-trace
// run ends with a checkpoint, the exported module loaded by Debian's
// python3-torch computes what the learner's net restored from that checkpoint
// (as --resume restores it) computes; and the errors a user can meet.
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "engine/learner/checkpoint.h"
#include "engine/learner/optimizer.h"
#include "envs/describe.h"
#include "models/policy_net.h"
#include "scripts/experiment_loader.h"
#include "tests/e2e/process.h"
#include "tests/models/export_check.h"

namespace moonseed::testing {
namespace {

namespace fs = std::filesystem;

const std::string kBinary = MOONSEED_BINARY;
const std::string kVtrace = std::string(MOONSEED_SOURCE_DIR) + "/examples/cartpole_vtrace.lua";

using Exported = Finished;

Exported run_export(const std::vector<std::string>& args, const std::string& log) {
  std::vector<std::string> argv = {kBinary, "export"};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_to_end(argv, log, 120);
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

class ExportRun : public ::testing::Test {
 protected:
  // One short run for every test of the suite: it ends on stop.frames and writes its final checkpoint.
  static void SetUpTestSuite() {
    run_ = new TrainingRun(kVtrace, {"stop.frames=6000", "log.progress=false", "checkpoint.keep=10"},
                           "moonseed-export");
    ChildProcess learner(run_->args({}), run_->log);
    ASSERT_EQ(learner.wait(240), std::optional<int>(0)) << read_file(run_->log);
    // Taken once: the tests add directories of their own beside it.
    dir_ = run_->run_dir();
  }
  static void TearDownTestSuite() {
    std::error_code ec;
    fs::remove_all(run_->runs_dir, ec);
    delete run_;
  }
  static std::string run_dir() { return dir_; }
  static std::string newest_checkpoint() {
    std::string newest;
    int64_t best = -1;
    for (const auto& entry : fs::directory_iterator(run_dir() + "/checkpoints")) {
      const std::string name = entry.path().filename().string();
      if (name.rfind("ckpt-", 0) != 0 || name.size() < 8 || name.substr(name.size() - 3) != ".pt") continue;
      const int64_t step = std::stoll(name.substr(5, name.size() - 8));
      if (step > best) best = step, newest = entry.path().string();
    }
    return newest;
  }
  static TrainingRun* run_;
  static inline std::string dir_;
};
TrainingRun* ExportRun::run_ = nullptr;

TEST_F(ExportRun, PyTorchComputesWhatTheLearnerRestoredFromTheSameCheckpointComputes) {
  const std::string dir = run_dir();
  const std::string checkpoint = newest_checkpoint();
  ASSERT_FALSE(checkpoint.empty()) << read_file(run_->log);
  const std::string case_dir = run_->runs_dir + "/case";
  fs::create_directories(case_dir);
  const Exported e = run_export({dir, "-o", case_dir + "/policy.pt"}, run_->runs_dir + "/export.log");
  ASSERT_EQ(e.exit_code, std::optional<int>(0)) << e.output;
  EXPECT_TRUE(contains(e.output, "wrote " + case_dir + "/policy.pt (vtrace on CartPole-v1, " +
                                     fs::path(checkpoint).filename().string()))
      << e.output;

  // The learner's net as --resume restores it: the run's config, its optimizer, load_checkpoint.
  const engine::ExperimentConfig config = scripts::load_experiment(dir + "/config.lua");
  const envs::EnvSpec spec = envs::describe_env(config.env.id, config.env.options, {}).spec;
  models::PolicyNet net(config.model, spec);
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

}  // namespace
}  // namespace moonseed::testing
