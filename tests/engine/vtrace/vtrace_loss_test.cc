#include "engine/vtrace/vtrace_loss.h"

#include <cmath>
#include <stdexcept>

#include <gtest/gtest.h>

#include "engine/learner/optimizer.h"
#include "models/action_dist.h"

namespace moonseed::engine {
namespace {

envs::EnvSpec test_spec(bool box_actions) {
  envs::EnvSpec spec;
  spec.id = "Test-v0";
  spec.observation.kind = envs::SpaceKind::kBox;
  spec.observation.shape = {3};
  if (box_actions) {
    spec.action.kind = envs::SpaceKind::kBox;
    spec.action.shape = {2};
  } else {
    spec.action.kind = envs::SpaceKind::kDiscrete;
    spec.action.n = 2;
  }
  return spec;
}

// A random batch of B unrolls of T+1 steps; step 2 of column 1 is a final
// observation (invalid), and step 1 of column 1 was truncated just before it.
UnrollBatch random_batch(int64_t T, int64_t B, bool box_actions) {
  UnrollBatch batch;
  batch.observations = torch::randn({T + 1, B, 3});
  batch.actions = box_actions ? torch::randn({T + 1, B, 2}) : torch::randint(0, 2, {T + 1, B});
  batch.behaviour_logp = -torch::rand({T + 1, B}) - 0.2;
  batch.rewards = torch::randn({T + 1, B});
  batch.terminated = torch::zeros({T + 1, B});
  batch.truncated = torch::zeros({T + 1, B});
  batch.valid = torch::ones({T + 1, B});
  batch.truncated[1][1] = 1;
  batch.valid[2][1] = 0;
  batch.terminated[0][0] = 1;  // column 0: episode ends after step 0 ...
  batch.valid[1][0] = 0;       // ... so step 1 holds its final observation
  batch.policy_version = torch::zeros({T + 1, B}, torch::kInt64);
  return batch;
}

VTraceConfig test_config() {
  VTraceConfig config;
  config.entropy_cost = 0.01;
  return config;
}

void expect_every_parameter_gets_a_gradient(bool box_actions) {
  torch::manual_seed(1);
  models::PolicyNet net(models::ModelSpec{}, test_spec(box_actions));
  const LossTerms terms = vtrace_loss(net, random_batch(5, 4, box_actions), test_config());
  terms.total.backward();
  for (const auto& p : net->named_parameters()) {
    ASSERT_TRUE(p.value().grad().defined()) << p.key();
    EXPECT_GT(p.value().grad().abs().sum().item<double>(), 0.0) << p.key();
  }
}

TEST(VTraceLoss, GradientsReachEveryParameterWithDiscreteActions) {
  expect_every_parameter_gets_a_gradient(false);
}

TEST(VTraceLoss, GradientsReachEveryParameterWithBoxActions) {
  expect_every_parameter_gets_a_gradient(true);
}

TEST(VTraceLoss, InvalidStepsContributeNothing) {
  torch::manual_seed(2);
  models::PolicyNet net(models::ModelSpec{}, test_spec(false));
  UnrollBatch batch = random_batch(5, 4, false);
  const LossTerms before = vtrace_loss(net, batch, test_config());

  // Whatever sits in the invalid steps (1 of column 0, 2 of column 1): their
  // reward, action, behaviour log-prob and termination flag must not matter.
  for (auto [t, b] : {std::pair<int, int>{1, 0}, {2, 1}}) {
    batch.rewards[t][b] = 1e6;
    batch.actions[t][b] = 1 - batch.actions[t][b].item<int64_t>();
    batch.behaviour_logp[t][b] = -1e4;
    batch.terminated[t][b] = 1;
  }
  const LossTerms after = vtrace_loss(net, batch, test_config());
  EXPECT_EQ(after.total.item<double>(), before.total.item<double>());
  EXPECT_EQ(after.policy, before.policy);
  EXPECT_EQ(after.baseline, before.baseline);
  EXPECT_EQ(after.entropy, before.entropy);
  EXPECT_EQ(after.mean_rho, before.mean_rho);
}

TEST(VTraceLoss, CountsOnlyValidStepsBeforeTheBootstrapStep) {
  torch::manual_seed(3);
  models::PolicyNet net(models::ModelSpec{}, test_spec(false));
  UnrollBatch batch = random_batch(5, 4, false);
  batch.valid[5][3] = 0;  // the bootstrap step T is not a training step either way
  EXPECT_EQ(vtrace_loss(net, batch, test_config()).valid_steps, 5 * 4 - 2);
}

TEST(VTraceLoss, OnPolicyDataHasMeanRhoOne) {
  torch::manual_seed(4);
  models::PolicyNet net(models::ModelSpec{}, test_spec(false));
  UnrollBatch batch = random_batch(5, 4, false);
  {
    torch::NoGradGuard no_grad;
    const models::PolicyOutput out = net->forward(batch.observations.flatten(0, 1));
    batch.behaviour_logp = models::log_prob(out, batch.actions.flatten(0, 1)).view({6, 4});
  }
  EXPECT_NEAR(vtrace_loss(net, batch, test_config()).mean_rho, 1.0, 1e-6);
}

TEST(VTraceLoss, TotalIsTheSumOfItsTerms) {
  torch::manual_seed(5);
  models::PolicyNet net(models::ModelSpec{}, test_spec(true));
  const LossTerms terms = vtrace_loss(net, random_batch(4, 3, true), test_config());
  EXPECT_NEAR(terms.total.item<double>(), terms.policy + terms.baseline + terms.entropy, 1e-5);
  // The entropy term is minus the (positive-coefficient) bonus.
  EXPECT_NEAR(terms.entropy, -test_config().entropy_cost * terms.mean_entropy, 1e-9);
}

TEST(VTraceLoss, BehaviourCloningAddsMinusTheMeanLogProbOfTheLoggedActionsOverValidSteps) {
  torch::manual_seed(6);
  models::PolicyNet net(models::ModelSpec{}, test_spec(false));
  UnrollBatch batch = random_batch(5, 4, false);
  batch.valid[1][2] = 0;  // a final observation: not cloned
  double expected = 0;
  {
    torch::NoGradGuard no_grad;
    const models::PolicyOutput out = net->forward(batch.observations.flatten(0, 1));
    const torch::Tensor logpi = models::log_prob(out, batch.actions.flatten(0, 1)).view({6, 4});
    const torch::Tensor valid = batch.valid.narrow(0, 0, 5).to(torch::kFloat32);
    expected = -0.25 * (logpi.narrow(0, 0, 5) * valid).sum().item<double>() / valid.sum().item<double>();
  }
  const LossTerms without = vtrace_loss(net, batch, test_config());
  const LossTerms with = vtrace_loss(net, batch, test_config(), 0.25);
  EXPECT_EQ(without.bc, 0.0);
  EXPECT_NEAR(with.bc, expected, 1e-6);
  EXPECT_GT(with.bc, 0.0);  // -log of a probability
  EXPECT_NEAR(with.total.item<double>(), without.total.item<double>() + expected, 1e-5);
}

TEST(VTraceLoss, AveragesOverValidStepsSoBatchSizeDoesNotScaleTheLoss) {
  torch::manual_seed(6);
  models::PolicyNet net(models::ModelSpec{}, test_spec(false));
  const UnrollBatch one = random_batch(5, 3, false);
  UnrollBatch twice = one;
  twice.observations = torch::cat({one.observations, one.observations}, 1);
  twice.actions = torch::cat({one.actions, one.actions}, 1);
  twice.behaviour_logp = torch::cat({one.behaviour_logp, one.behaviour_logp}, 1);
  twice.rewards = torch::cat({one.rewards, one.rewards}, 1);
  twice.terminated = torch::cat({one.terminated, one.terminated}, 1);
  twice.truncated = torch::cat({one.truncated, one.truncated}, 1);
  twice.valid = torch::cat({one.valid, one.valid}, 1);
  const LossTerms a = vtrace_loss(net, one, test_config());
  const LossTerms b = vtrace_loss(net, twice, test_config());
  EXPECT_EQ(b.valid_steps, 2 * a.valid_steps);
  EXPECT_NEAR(b.total.item<double>(), a.total.item<double>(), 1e-5);
}

TEST(VTraceLoss, RejectsABatchWhoseTensorsDisagreeInShape) {
  models::PolicyNet net(models::ModelSpec{}, test_spec(false));
  UnrollBatch batch = random_batch(5, 4, false);
  batch.rewards = torch::zeros({5, 4});  // T rows instead of T+1
  EXPECT_THROW(vtrace_loss(net, batch, test_config()), std::invalid_argument);
}

TEST(VTraceLoss, AdamOnABanditBatchRaisesTheProbabilityOfTheBetterArm) {
  // Two arms; arm 1 pays 1, arm 0 pays 0. Every step is a one-step episode
  // (terminated), actions come from a uniform behaviour policy (mu = 1/2).
  torch::manual_seed(7);
  const int64_t T = 4, B = 16;
  envs::EnvSpec spec;
  spec.id = "Bandit-v0";
  spec.observation.kind = envs::SpaceKind::kBox;
  spec.observation.shape = {1};
  spec.action.kind = envs::SpaceKind::kDiscrete;
  spec.action.n = 2;
  models::PolicyNet net(models::ModelSpec{}, spec);

  UnrollBatch batch;
  batch.observations = torch::ones({T + 1, B, 1});
  batch.actions = torch::randint(0, 2, {T + 1, B});
  batch.behaviour_logp = torch::full({T + 1, B}, std::log(0.5));
  batch.rewards = batch.actions.to(torch::kFloat32);
  batch.terminated = torch::ones({T + 1, B});
  batch.truncated = torch::zeros({T + 1, B});
  batch.valid = torch::ones({T + 1, B});
  batch.policy_version = torch::zeros({T + 1, B}, torch::kInt64);

  auto better_arm_probability = [&] {
    torch::NoGradGuard no_grad;
    return torch::softmax(net->forward(torch::ones({1, 1})).logits_or_mean, -1)[0][1]
        .item<double>();
  };
  const double p_before = better_arm_probability();
  OptimizerConfig opt_config;
  opt_config.lr = 1e-2;
  auto optimizer = make_optimizer(opt_config, net->parameters());
  for (int step = 0; step < 150; ++step) {
    optimizer->zero_grad();
    vtrace_loss(net, batch, test_config()).total.backward();
    optimizer->step();
  }
  const double p_after = better_arm_probability();
  EXPECT_NEAR(p_before, 0.5, 0.05);
  EXPECT_GT(p_after, 0.9);
}

}  // namespace
}  // namespace moonseed::engine
