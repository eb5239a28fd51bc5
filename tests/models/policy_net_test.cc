#include "models/policy_net.h"

#include <cmath>
#include <stdexcept>
#include <tuple>

#include <gtest/gtest.h>

namespace moonseed::models {
namespace {

envs::Space box(std::vector<int64_t> shape, envs::DType dtype = envs::DType::kFloat32) {
  envs::Space s;
  s.kind = envs::SpaceKind::kBox;
  s.dtype = dtype;
  s.shape = std::move(shape);
  return s;
}

envs::Space discrete(int64_t n) {
  envs::Space s;
  s.kind = envs::SpaceKind::kDiscrete;
  s.n = n;
  return s;
}

envs::EnvSpec spec_of(envs::Space obs, envs::Space act) {
  envs::EnvSpec spec;
  spec.id = "Test-v0";
  spec.observation = std::move(obs);
  spec.action = std::move(act);
  return spec;
}

TEST(PolicyNet, DiscreteActionsGiveOneLogitPerActionAndOneValuePerObservation) {
  PolicyNet net(models::ModelSpec{}, spec_of(box({4}), discrete(3)));
  const PolicyOutput out = net->forward(torch::randn({5, 4}));
  EXPECT_EQ(out.logits_or_mean.sizes(), torch::IntArrayRef({5, 3}));
  EXPECT_EQ(out.value.sizes(), torch::IntArrayRef({5}));
  EXPECT_FALSE(out.log_std.defined());
  EXPECT_TRUE(net->discrete());
  EXPECT_EQ(net->action_size(), 3);
}

TEST(PolicyNet, BoxActionsGiveAMeanAndTheInitialLogStdPerDimension) {
  models::ModelSpec config;
  config.init_log_std = -0.7;
  PolicyNet net(config, spec_of(box({3}), box({2})));
  const PolicyOutput out = net->forward(torch::randn({5, 3}));
  EXPECT_EQ(out.logits_or_mean.sizes(), torch::IntArrayRef({5, 2}));
  EXPECT_EQ(out.value.sizes(), torch::IntArrayRef({5}));
  ASSERT_TRUE(out.log_std.defined());
  EXPECT_EQ(out.log_std.sizes(), torch::IntArrayRef({5, 2}));
  EXPECT_TRUE(torch::allclose(out.log_std, torch::full({5, 2}, -0.7)));
  EXPECT_FALSE(net->discrete());
}

TEST(PolicyNet, LogStdIsALearnedParameterIndependentOfTheObservation) {
  PolicyNet net(models::ModelSpec{}, spec_of(box({3}), box({2})));
  const PolicyOutput out = net->forward(torch::randn({4, 3}));
  EXPECT_TRUE(torch::equal(out.log_std[0], out.log_std[3]));
  out.log_std.sum().backward();
  const auto params = net->named_parameters();
  ASSERT_NE(params.find("log_std"), nullptr);
  EXPECT_TRUE(params["log_std"].grad().defined());
}

TEST(PolicyNet, MultiDimensionalUint8ObservationsAreFlattened) {
  PolicyNet net(models::ModelSpec{}, spec_of(box({2, 3, 4}, envs::DType::kUInt8), discrete(6)));
  const PolicyOutput out =
      net->forward(torch::randint(0, 256, {7, 2, 3, 4}, torch::dtype(torch::kUInt8)));
  EXPECT_EQ(out.logits_or_mean.sizes(), torch::IntArrayRef({7, 6}));
  EXPECT_EQ(out.value.sizes(), torch::IntArrayRef({7}));
  EXPECT_EQ(net->observation_size(), 24);
}

TEST(PolicyNet, Uint8ObservationsAreScaledByOneOver255) {
  // Same seed, same layer shapes: the two nets have identical weights, and the
  // uint8 one must see x / 255 where the float one sees it directly.
  torch::manual_seed(3);
  PolicyNet bytes(models::ModelSpec{}, spec_of(box({5}, envs::DType::kUInt8), discrete(2)));
  torch::manual_seed(3);
  PolicyNet floats(models::ModelSpec{}, spec_of(box({5}), discrete(2)));
  const torch::Tensor raw = torch::randint(0, 256, {4, 5}, torch::dtype(torch::kUInt8));
  const PolicyOutput a = bytes->forward(raw);
  const PolicyOutput b = floats->forward(raw.to(torch::kFloat32) / 255.0);
  EXPECT_TRUE(torch::allclose(a.logits_or_mean, b.logits_or_mean, 1e-5, 1e-7));
  EXPECT_TRUE(torch::allclose(a.value, b.value, 1e-5, 1e-6));
}

// MinAtar's cells are uint8 0/1 with high = 1: the net sees them as 0/1, not 1/255.
TEST(PolicyNet, Uint8ObservationsAreScaledByTheSpacesUpperBound) {
  envs::Space cells = box({5}, envs::DType::kUInt8);
  cells.high.assign(5, 1.f);
  cells.low.assign(5, 0.f);
  torch::manual_seed(3);
  PolicyNet bytes(models::ModelSpec{}, spec_of(cells, discrete(2)));
  torch::manual_seed(3);
  PolicyNet floats(models::ModelSpec{}, spec_of(box({5}), discrete(2)));
  const torch::Tensor raw = torch::randint(0, 2, {4, 5}, torch::dtype(torch::kUInt8));
  EXPECT_TRUE(torch::allclose(bytes->forward(raw).logits_or_mean,
                              floats->forward(raw.to(torch::kFloat32)).logits_or_mean, 1e-5, 1e-7));
}

TEST(PolicyNet, SeparateTorsosByDefaultAndOneSharedTorsoWhenAsked) {
  models::ModelSpec config;
  config.hidden = {8, 8};
  PolicyNet separate(config, spec_of(box({4}), discrete(2)));
  config.shared_torso = true;
  PolicyNet shared(config, spec_of(box({4}), discrete(2)));
  EXPECT_NE(separate->named_parameters().find("value_torso.0.weight"), nullptr);
  EXPECT_EQ(shared->named_parameters().find("value_torso.0.weight"), nullptr);

  // With a shared torso the value loss moves the torso the policy reads.
  shared->forward(torch::randn({3, 4})).value.sum().backward();
  const torch::Tensor g = shared->named_parameters()["policy_torso.0.weight"].grad();
  ASSERT_TRUE(g.defined());
  EXPECT_GT(g.abs().sum().item<double>(), 0.0);
}

TEST(PolicyNet, WithoutHiddenLayersTheHeadsReadTheObservation) {
  models::ModelSpec config;
  config.hidden = {};
  PolicyNet net(config, spec_of(box({4}), discrete(2)));
  const PolicyOutput out = net->forward(torch::randn({3, 4}));
  EXPECT_EQ(out.logits_or_mean.sizes(), torch::IntArrayRef({3, 2}));
  EXPECT_EQ(out.value.sizes(), torch::IntArrayRef({3}));
}

TEST(PolicyNet, InitialisesOrthogonallyWithPerLayerGainsAndZeroBiases) {
  models::ModelSpec config;
  config.hidden = {16, 16};
  PolicyNet net(config, spec_of(box({4}), discrete(3)));
  auto params = net->named_parameters();
  // Hidden [16, 4]: orthonormal columns times sqrt(2), so W^T W = 2 I.
  const torch::Tensor hidden = params["policy_torso.0.weight"];
  EXPECT_TRUE(torch::allclose(hidden.t().mm(hidden), 2.0 * torch::eye(4), 1e-4, 1e-4));
  // Policy head [3, 16]: orthonormal rows times 0.01, so W W^T = 1e-4 I.
  const torch::Tensor policy = params["policy_head.weight"];
  EXPECT_TRUE(torch::allclose(policy.mm(policy.t()), 1e-4 * torch::eye(3), 1e-4, 1e-8));
  // Value head [1, 16]: a unit row.
  EXPECT_NEAR(params["value_head.weight"].norm().item<double>(), 1.0, 1e-5);
  for (const auto& p : params) {
    if (p.key().size() >= 4 && p.key().compare(p.key().size() - 4, 4, "bias") == 0) {
      EXPECT_EQ(p.value().abs().sum().item<double>(), 0.0) << p.key();
    }
  }
}

TEST(PolicyNet, ReluActivationIsAccepted) {
  models::ModelSpec config;
  config.activation = "relu";
  PolicyNet net(config, spec_of(box({4}), discrete(2)));
  EXPECT_EQ(net->forward(torch::randn({2, 4})).value.sizes(), torch::IntArrayRef({2}));
}

TEST(PolicyNet, RejectsAnUnknownActivationOrKind) {
  models::ModelSpec config;
  config.activation = "gelu";
  EXPECT_THROW(PolicyNet(config, spec_of(box({4}), discrete(2))), std::invalid_argument);
  config = models::ModelSpec{};
  config.kind = "lstm";
  EXPECT_THROW(PolicyNet(config, spec_of(box({4}), discrete(2))), std::invalid_argument);
}

TEST(PolicyNet, RejectsObservationsOfTheWrongSize) {
  PolicyNet net(models::ModelSpec{}, spec_of(box({4}), discrete(2)));
  EXPECT_THROW(net->forward(torch::randn({3, 5})), std::invalid_argument);
}

int64_t parameters_under(PolicyNet& net, const std::string& prefix) {
  int64_t n = 0;
  for (const auto& p : net->named_parameters()) {
    if (p.key().compare(0, prefix.size(), prefix) == 0) n += p.value().numel();
  }
  return n;
}

TEST(PolicyNet, TheNatureCnnPresetReadsAnImageInItsOwnShape) {
  models::ModelSpec config;
  config.kind = "nature_cnn";
  PolicyNet net(config, spec_of(box({4, 84, 84}, envs::DType::kUInt8), discrete(6)));
  // Mnih et al. 2015: 84x84 -> 20x20x32 -> 9x9x64 -> 7x7x64 = 3136 -> 512.
  const int64_t torso = (4 * 32 * 64 + 32) + (32 * 64 * 16 + 64) + (64 * 64 * 9 + 64) + (3136 * 512 + 512);
  EXPECT_EQ(parameters_under(net, "policy_layers."), torso);
  EXPECT_EQ(parameters_under(net, "value_layers."), torso);
  EXPECT_EQ(parameters_under(net, "policy_head."), 512 * 6 + 6);
  const PolicyOutput out = net->forward(torch::randint(0, 256, {2, 4, 84, 84}, torch::kUInt8));
  EXPECT_EQ(out.logits_or_mean.sizes(), torch::IntArrayRef({2, 6}));
  EXPECT_EQ(out.value.sizes(), torch::IntArrayRef({2}));
}

TEST(PolicyNet, DeclaredLayersWithASharedTorsoFeedBothHeads) {
  models::ModelSpec config;
  config.kind = "layers";
  config.layers = {{"linear", 32}, {"relu"}};
  config.shared_torso = true;
  PolicyNet net(config, spec_of(box({4}), discrete(2)));
  EXPECT_EQ(parameters_under(net, ""), (4 * 32 + 32) + (32 * 2 + 2) + (32 + 1));
  EXPECT_EQ(parameters_under(net, "value_layers."), 0);
  net->forward(torch::randn({3, 4})).value.sum().backward();
  const torch::Tensor g = net->named_parameters()["policy_layers.layers.0.weight"].grad();
  ASSERT_TRUE(g.defined());
  EXPECT_GT(g.abs().sum().item<double>(), 0.0);
}

std::string construction_error(const models::ModelSpec& config, const envs::EnvSpec& spec) {
  try {
    PolicyNet net(config, spec);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(PolicyNet, DeclaredLayersThatDoNotFitTheObservationAreRefused) {
  models::ModelSpec config;
  config.kind = "layers";
  config.layers = {{"conv2d", 8, 3, 1, 0}, {"relu"}};
  EXPECT_EQ(construction_error(config, spec_of(box({4}), discrete(2))),
            "PolicyNet: model.layers layer 1 conv2d(8, kernel 3, stride 1): needs a [channels, height, width] "
            "input (its input is 4)");
  config.layers = {{"lstm", 16}, {"relu"}};
  EXPECT_NE(construction_error(config, spec_of(box({4}), discrete(2))).find("an lstm must be the last layer"),
            std::string::npos);
}

models::ModelSpec recurrent_spec() {
  models::ModelSpec config;
  config.kind = "layers";
  config.layers = {{"linear", 16}, {"relu"}, {"lstm", 8}};
  return config;
}

TEST(PolicyNet, AnLstmLastMakesARecurrentNetWhoseUnrollEqualsItsSteps) {
  torch::manual_seed(5);
  models::PolicyNet net(recurrent_spec(), spec_of(box({3}), discrete(4)));
  ASSERT_TRUE(net->recurrent());
  EXPECT_EQ(net->state_size(), 8);
  const torch::Tensor obs = torch::randn({5, 2, 3});
  const torch::Tensor prev_action = torch::randint(-1, 4, {5, 2}, torch::kInt64);
  const torch::Tensor prev_reward = torch::randn({5, 2});
  models::PolicyNetImpl::State state{torch::randn({2, 8}), torch::randn({2, 8})};
  const auto [all, last] = net->unroll(obs, prev_action, prev_reward, torch::zeros({5, 2}), state);
  ASSERT_EQ(all.logits_or_mean.sizes(), torch::IntArrayRef({10, 4}));
  ASSERT_EQ(all.value.sizes(), torch::IntArrayRef({10}));
  for (int64_t t = 0; t < 5; ++t) {
    models::PolicyOutput out;
    std::tie(out, state) = net->step(obs[t], prev_action[t], prev_reward[t], state);
    EXPECT_TRUE(torch::allclose(out.logits_or_mean, all.logits_or_mean.narrow(0, 2 * t, 2), 1e-5, 1e-6)) << t;
    EXPECT_TRUE(torch::allclose(out.value, all.value.narrow(0, 2 * t, 2), 1e-5, 1e-6)) << t;
  }
  EXPECT_TRUE(torch::allclose(state.h, last.h, 1e-5, 1e-6));
  EXPECT_TRUE(torch::allclose(state.c, last.c, 1e-5, 1e-6));
  EXPECT_THROW(net->forward(obs[0]), std::logic_error);
}

TEST(PolicyNet, AResetInAnUnrollStartsTheEpisodeFromAZeroState) {
  torch::manual_seed(6);
  models::PolicyNet net(recurrent_spec(), spec_of(box({3}), discrete(2)));
  const torch::Tensor obs = torch::randn({4, 2, 3});
  const torch::Tensor prev_action = torch::randint(0, 2, {4, 2}, torch::kInt64);
  const torch::Tensor prev_reward = torch::randn({4, 2});
  torch::Tensor reset = torch::zeros({4, 2});
  reset[2][0] = 1;
  const auto [all, last] =
      net->unroll(obs, prev_action, prev_reward, reset, {torch::randn({2, 8}), torch::randn({2, 8})});
  const auto tail = [](const torch::Tensor& t) { return t.narrow(0, 2, 2); };
  const auto [fresh, fresh_last] = net->unroll(tail(obs), tail(prev_action), tail(prev_reward),
                                               torch::zeros({2, 2}), net->initial_state(2));
  // Rows of env 0 at steps 2 and 3: 2 * 2 + 0 and 3 * 2 + 0; in the fresh unroll 0 and 2.
  EXPECT_TRUE(torch::allclose(all.value.index({torch::tensor({4, 6})}), fresh.value.index({torch::tensor({0, 2})}),
                              1e-5, 1e-6));
  EXPECT_FALSE(torch::allclose(all.value.index({torch::tensor({5, 7})}), fresh.value.index({torch::tensor({1, 3})}),
                               1e-3, 1e-4));
  EXPECT_THROW(net->unroll(obs, prev_action, prev_reward, torch::zeros({4, 3}), net->initial_state(2)),
               std::invalid_argument);
  EXPECT_THROW(net->step(obs[0], prev_action[0], prev_reward[0], net->initial_state(3)), std::invalid_argument);
  EXPECT_THROW(net->step(obs[0], prev_reward[0], prev_reward[0], net->initial_state(2)), std::invalid_argument);
}

TEST(PolicyNet, TheRecurrentCoreIsFedThePreviousActionAndReward) {
  torch::manual_seed(8);
  models::PolicyNet net(recurrent_spec(), spec_of(box({3}), discrete(3)));
  const torch::Tensor obs = torch::randn({2, 3});
  const auto state = net->initial_state(2);
  auto value = [&](std::vector<int64_t> action, std::vector<float> reward) {
    return net->step(obs, torch::tensor(action, torch::kInt64), torch::tensor(reward), state).first.value;
  };
  const torch::Tensor base = value({0, 0}, {0, 0});
  EXPECT_FALSE(torch::allclose(base, value({1, 0}, {0, 0})));
  EXPECT_FALSE(torch::allclose(base, value({0, 0}, {1, 0})));
  // An action outside [0, n) is none: the same as -1.
  EXPECT_TRUE(torch::equal(value({-1, 0}, {0, 0}), value({7, 0}, {0, 0})));
}

}  // namespace
}  // namespace moonseed::models
