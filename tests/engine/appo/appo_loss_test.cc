// APPO's loss and gradient against python3-torch (appo_reference.py computes them from the
// formulas with a linear net it writes out itself), and its minibatch schedule.
#include "engine/appo/appo_loss.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <torch/script.h>

#include "models/action_dist.h"
#include "tests/models/export_check.h"

namespace moonseed::engine {
namespace {

namespace fs = std::filesystem;

envs::EnvSpec linear_spec(bool box) {
  envs::EnvSpec spec;
  spec.id = "Test-v0";
  spec.observation.kind = envs::SpaceKind::kBox;
  spec.observation.shape = {3};
  if (box) {
    spec.action.kind = envs::SpaceKind::kBox;
    spec.action.shape = {2};
  } else {
    spec.action.kind = envs::SpaceKind::kDiscrete;
    spec.action.n = 3;
  }
  return spec;
}

struct Case {
  std::string name;
  bool box = false;
  AppoConfig config;
};

// A linear policy net (no hidden layers), a minibatch of B unrolls of T+1 steps with one final
// observation, behaviour log-probs spread around the net's own so that some ratios leave the
// clip range, and targets; the engine's loss terms and gradients beside them in DIR/data.pt.
void write_case(const Case& c, const std::string& dir) {
  torch::manual_seed(17);
  const int64_t T = 5, B = 4;
  ExperimentConfig config;
  config.model.hidden = {};
  models::PolicyNet net(config.model, linear_spec(c.box));
  UnrollBatch batch;
  batch.observations = torch::randn({T + 1, B, 3});
  batch.actions = c.box ? torch::randn({T + 1, B, 2}) : torch::randint(0, 3, {T + 1, B});
  batch.rewards = torch::randn({T + 1, B});
  batch.terminated = torch::zeros({T + 1, B});
  batch.truncated = torch::zeros({T + 1, B});
  batch.valid = torch::ones({T + 1, B});
  batch.valid[2][1] = 0;
  batch.policy_version = torch::zeros({T + 1, B}, torch::kInt64);
  {
    torch::NoGradGuard no_grad;
    const models::PolicyOutput out = net->forward(batch.observations.flatten(0, 1));
    batch.behaviour_logp =
        models::log_prob(out, batch.actions.flatten(0, 1)).view({T + 1, B}) + (torch::rand({T + 1, B}) - 0.5) * 1.2;
  }
  batch.frames = batch.valid.narrow(0, 0, T).sum().item<int64_t>();
  AppoTargets targets;
  targets.vs = torch::randn({T, B});
  targets.advantages = torch::randn({T, B});
  targets.old_values = torch::randn({T, B}) * 0.3;

  const AppoLossTerms loss = appo_loss(net, batch, targets, c.config);
  loss.total.backward();

  std::vector<std::pair<std::string, torch::Tensor>> data = {
      {"obs", batch.observations},
      {"actions", batch.actions},
      {"behaviour_logp", batch.behaviour_logp},
      {"valid", batch.valid},
      {"vs", targets.vs},
      {"advantages", targets.advantages},
      {"old_values", targets.old_values},
      {"clip", torch::tensor(c.config.clip)},
      {"value_clip", torch::tensor(c.config.value_clip)},
      {"kl_coef", torch::tensor(c.config.kl_coef)},
      {"value_cost", torch::tensor(c.config.value_cost)},
      {"entropy_cost", torch::tensor(c.config.entropy_cost)},
      {"normalize", torch::tensor(c.config.normalize_advantages ? 1.0 : 0.0)},
      {"loss_total", torch::tensor(loss.total.item<double>())},
      {"loss_policy", torch::tensor(loss.policy)},
      {"loss_value", torch::tensor(loss.value)},
      {"loss_entropy", torch::tensor(loss.entropy)},
      {"loss_kl", torch::tensor(loss.kl)},
      {"clip_fraction", torch::tensor(loss.clip_fraction)},
  };
  for (const auto& p : net->named_parameters()) {
    std::string name = p.key();
    for (char& ch : name) ch = ch == '.' ? '_' : ch;
    data.emplace_back("param_" + name, p.value());
    data.emplace_back("grad_" + name, p.value().grad());
  }
  fs::create_directories(dir);
  testing::write_tensors(dir + "/data.pt", data);
}

std::string run_reference(const std::vector<std::string>& dirs, int* exit_code) {
  std::string command =
      std::string(MOONSEED_PYTHON) + " " + MOONSEED_SOURCE_DIR + "/tests/engine/appo/appo_reference.py";
  for (const std::string& dir : dirs) command += " '" + dir + "'";
  const std::string log = dirs.front() + "/../reference.log";
  command += " > '" + log + "' 2>&1";
  const int status = std::system(command.c_str());
  *exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream in(log);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(AppoLoss, EqualsPythonTorchsFromTheFormulasLossAndGradient) {
  const std::string root = (fs::temp_directory_path() / ("appo_reference." + std::to_string(::getpid()))).string();
  std::vector<Case> cases(4);
  cases[0].name = "discrete_plain";
  cases[1].name = "discrete_every_option";
  cases[1].config.clip = 0.1;
  cases[1].config.value_clip = 0.2;
  cases[1].config.kl_coef = 0.7;
  cases[1].config.normalize_advantages = true;
  cases[1].config.entropy_cost = 0.05;
  cases[2].name = "box_plain";
  cases[2].box = true;
  cases[3].name = "box_value_clip_kl";
  cases[3].box = true;
  cases[3].config.value_clip = 0.1;
  cases[3].config.kl_coef = 0.3;
  std::vector<std::string> dirs;
  for (const Case& c : cases) {
    dirs.push_back(root + "/" + c.name);
    write_case(c, dirs.back());
  }
  int code = -1;
  const std::string output = run_reference(dirs, &code);
  EXPECT_EQ(code, 0) << output;
  for (const Case& c : cases) EXPECT_NE(output.find(c.name + ": OK"), std::string::npos) << output;
  // The spread behaviour log-probs must exercise the clip, or the test checks only half a min().
  EXPECT_EQ(output.find("clip fraction 0.00"), std::string::npos) << output;
  fs::remove_all(root);
}

TEST(AppoLoss, AtTheBehaviourPolicyTheRatioIsOneAndNothingIsClipped) {
  torch::manual_seed(3);
  const int64_t T = 4, B = 3;
  ExperimentConfig config;
  config.model.hidden = {8};
  models::PolicyNet net(config.model, linear_spec(false));
  UnrollBatch batch;
  batch.observations = torch::randn({T + 1, B, 3});
  batch.actions = torch::randint(0, 3, {T + 1, B});
  batch.rewards = torch::randn({T + 1, B});
  batch.terminated = torch::zeros({T + 1, B});
  batch.truncated = torch::zeros({T + 1, B});
  batch.valid = torch::ones({T + 1, B});
  batch.policy_version = torch::zeros({T + 1, B}, torch::kInt64);
  {
    torch::NoGradGuard no_grad;
    const models::PolicyOutput out = net->forward(batch.observations.flatten(0, 1));
    batch.behaviour_logp = models::log_prob(out, batch.actions.flatten(0, 1)).view({T + 1, B});
  }
  AppoConfig appo;
  appo.kl_coef = 1;
  const AppoTargets targets = appo_targets(net, batch, appo);
  EXPECT_NEAR(targets.mean_rho, 1.0, 1e-6);
  const AppoLossTerms loss = appo_loss(net, batch, targets, appo);
  EXPECT_EQ(loss.clip_fraction, 0.0);
  EXPECT_NEAR(loss.kl, 0.0, 1e-10);
  // With every ratio 1 the surrogate is V-trace's advantage: policy = -mean(A).
  EXPECT_NEAR(loss.policy, -targets.advantages.mean().item<double>(), 1e-5);
  EXPECT_EQ(loss.valid_steps, T * B);
}

TEST(AppoMinibatches, EachPassUsesEveryUnrollOnceInPartsOfNearlyEqualSize) {
  torch::manual_seed(1);
  const std::vector<torch::Tensor> order = minibatch_order(10, 3, 4, torch::kCPU);
  ASSERT_EQ(order.size(), 12u);
  std::vector<std::vector<int64_t>> passes(3);
  for (size_t k = 0; k < order.size(); ++k) {
    EXPECT_TRUE(order[k].numel() == 2 || order[k].numel() == 3) << order[k].numel();
    for (int64_t i = 0; i < order[k].numel(); ++i) passes[k / 4].push_back(order[k][i].item<int64_t>());
  }
  for (const auto& pass : passes) {
    EXPECT_EQ(std::set<int64_t>(pass.begin(), pass.end()), (std::set<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
    EXPECT_EQ(pass.size(), 10u);
  }
  EXPECT_FALSE(torch::equal(torch::cat({order[0], order[1], order[2], order[3]}),
                            torch::cat({order[4], order[5], order[6], order[7]})))
      << "the passes were not reshuffled";
  // More minibatches than unrolls: one unroll each.
  EXPECT_EQ(minibatch_order(3, 1, 8, torch::kCPU).size(), 3u);
}

}  // namespace
}  // namespace moonseed::engine
