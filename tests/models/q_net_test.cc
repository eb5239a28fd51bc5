#include "models/q_net.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>
#include "tests/error_text.h"

namespace moonseed::models {
namespace {

using test::error_text;

envs::EnvSpec spec_of(std::vector<int64_t> obs_shape, int64_t actions,
                      envs::DType dtype = envs::DType::kFloat32) {
  envs::EnvSpec spec;
  spec.id = "Test-v0";
  spec.observation.kind = envs::SpaceKind::kBox;
  spec.observation.dtype = dtype;
  spec.observation.shape = std::move(obs_shape);
  spec.action.kind = envs::SpaceKind::kDiscrete;
  spec.action.n = actions;
  return spec;
}

// A small recurrent dueling net: obs [3] -> linear 8 -> relu -> LSTM 6 -> streams of 5 -> 4 actions.
QNetSpec small_spec() {
  QNetSpec spec;
  spec.torso = {LayerSpec{"linear", 8}, LayerSpec{"relu"}};
  spec.lstm = 6;
  spec.head_hidden = 5;
  return spec;
}

struct Sequence {
  torch::Tensor obs, prev_action, prev_reward, reset;
};

Sequence random_sequence(int64_t T, int64_t B) {
  return {torch::randn({T, B, 3}), torch::randint(0, 4, {T, B}, torch::kInt64), torch::randn({T, B}),
          torch::zeros({T, B})};
}

QNetImpl::State random_state(int64_t B) { return {torch::randn({B, 6}), torch::randn({B, 6})}; }

TEST(QNet, StepAndUnrollGiveOneQPerActionAndAStateOfTheLstmSize) {
  torch::manual_seed(1);
  QNet net(small_spec(), spec_of({3}, 4));
  EXPECT_EQ(net->state_size(), 6);
  EXPECT_EQ(net->num_actions(), 4);
  const QNetImpl::State s0 = net->initial_state(2);
  EXPECT_TRUE(torch::equal(s0.h, torch::zeros({2, 6})));
  EXPECT_TRUE(torch::equal(s0.c, torch::zeros({2, 6})));

  const auto [q, s1] = net->step(torch::randn({2, 3}), torch::tensor({0, 3}), torch::zeros({2}), s0);
  EXPECT_EQ(q.sizes(), torch::IntArrayRef({2, 4}));
  EXPECT_EQ(s1.h.sizes(), torch::IntArrayRef({2, 6}));
  EXPECT_EQ(s1.c.sizes(), torch::IntArrayRef({2, 6}));

  const Sequence seq = random_sequence(5, 2);
  const auto [qs, s5] = net->unroll(seq.obs, seq.prev_action, seq.prev_reward, seq.reset, s0);
  EXPECT_EQ(qs.sizes(), torch::IntArrayRef({5, 2, 4}));
  EXPECT_EQ(s5.h.sizes(), torch::IntArrayRef({2, 6}));
}

TEST(QNet, DuelingQIsValuePlusCentredAdvantageSoItsMeanOverActionsIsTheValue) {
  torch::manual_seed(2);
  QNet net(small_spec(), spec_of({3}, 4));
  const QNetImpl::Streams s = net->forward_streams(torch::randn({3, 3}), torch::tensor({1, 2, 0}),
                                                   torch::randn({3}), random_state(3));
  ASSERT_EQ(s.value.sizes(), torch::IntArrayRef({3}));
  ASSERT_EQ(s.advantage.sizes(), torch::IntArrayRef({3, 4}));
  // The advantage stream itself is not centred; Q centres it.
  EXPECT_GT(s.advantage.mean(-1).abs().max().item<double>(), 1e-4);
  EXPECT_TRUE(torch::allclose(s.q.mean(-1), s.value, 1e-5, 1e-6));
  EXPECT_TRUE(
      torch::allclose(s.q - s.q.mean(-1, true), s.advantage - s.advantage.mean(-1, true), 1e-5, 1e-6));
}

TEST(QNet, TStepsEqualOneUnrollWithoutResets) {
  torch::manual_seed(3);
  QNet net(small_spec(), spec_of({3}, 4));
  const Sequence seq = random_sequence(4, 2);
  QNetImpl::State state = random_state(2);
  const auto [qs, last] = net->unroll(seq.obs, seq.prev_action, seq.prev_reward, seq.reset, state);
  for (int64_t t = 0; t < 4; ++t) {
    torch::Tensor q;
    std::tie(q, state) = net->step(seq.obs[t], seq.prev_action[t], seq.prev_reward[t], state);
    EXPECT_TRUE(torch::allclose(q, qs[t], 1e-5, 1e-6)) << "t = " << t;
  }
  EXPECT_TRUE(torch::allclose(state.h, last.h, 1e-5, 1e-6));
  EXPECT_TRUE(torch::allclose(state.c, last.c, 1e-5, 1e-6));
}

TEST(QNet, AResetStartsTheStateAfreshAsAnUnrollBeginningThere) {
  torch::manual_seed(4);
  QNet net(small_spec(), spec_of({3}, 4));
  Sequence seq = random_sequence(5, 2);
  seq.reset[2][0] = 1;  // column 0 starts an episode at t = 2; column 1 carries on
  const auto [qs, last] = net->unroll(seq.obs, seq.prev_action, seq.prev_reward, seq.reset, random_state(2));
  const auto tail = [](const torch::Tensor& t) { return t.slice(0, 2); };
  const auto [fresh, fresh_last] = net->unroll(tail(seq.obs), tail(seq.prev_action), tail(seq.prev_reward),
                                               torch::zeros({3, 2}), net->initial_state(2));
  EXPECT_TRUE(torch::allclose(tail(qs).select(1, 0), fresh.select(1, 0), 1e-5, 1e-6));
  EXPECT_TRUE(torch::allclose(last.h[0], fresh_last.h[0], 1e-5, 1e-6));
  EXPECT_FALSE(torch::allclose(tail(qs).select(1, 1), fresh.select(1, 1), 1e-3, 1e-4));
}

TEST(QNet, GradientsReachEveryParameterThroughAnUnroll) {
  torch::manual_seed(5);
  QNet net(small_spec(), spec_of({3}, 4));
  const Sequence seq = random_sequence(3, 2);
  const auto [qs, last] = net->unroll(seq.obs, seq.prev_action, seq.prev_reward, seq.reset, random_state(2));
  // Weighted, since sum_a Q = A * V would leave the advantage stream without a gradient.
  (qs * torch::randn(qs.sizes())).sum().backward();
  for (const auto& p : net->named_parameters()) {
    ASSERT_TRUE(p.value().grad().defined()) << p.key();
    EXPECT_GT(p.value().grad().abs().sum().item<double>(), 0.0) << p.key();
  }
}

TEST(QNet, PreviousActionAndRewardFeedTheCoreAndAnOutOfRangeActionIsAZeroOneHot) {
  torch::manual_seed(6);
  QNet net(small_spec(), spec_of({3}, 4));
  const torch::Tensor obs = torch::randn({1, 3});
  const auto q_for = [&](int64_t action, double reward) {
    return net
        ->step(obs, torch::tensor({action}), torch::tensor({reward}, torch::kFloat32), net->initial_state(1))
        .first;
  };
  EXPECT_FALSE(torch::allclose(q_for(0, 0), q_for(1, 0)));
  EXPECT_FALSE(torch::allclose(q_for(0, 0), q_for(0, 1)));
  EXPECT_TRUE(torch::equal(q_for(-1, 0), q_for(4, 0)));
  EXPECT_FALSE(torch::allclose(q_for(-1, 0), q_for(0, 0)));
}

TEST(QNet, FeedForwardVariantHasNoStateAndIgnoresResets) {
  torch::manual_seed(7);
  QNetSpec spec = small_spec();
  spec.lstm = 0;
  spec.prev_action_reward = false;
  QNet net(spec, spec_of({3}, 4));
  EXPECT_EQ(net->state_size(), 0);
  const QNetImpl::State s = net->initial_state(2);
  EXPECT_FALSE(s.h.defined());
  EXPECT_FALSE(s.c.defined());
  const torch::Tensor obs = torch::randn({3, 2, 3});
  const auto [qs, last] = net->unroll(obs, {}, {}, torch::ones({3, 2}), s);
  EXPECT_EQ(qs.sizes(), torch::IntArrayRef({3, 2, 4}));
  EXPECT_FALSE(last.h.defined());
  EXPECT_TRUE(torch::allclose(net->step(obs[1], {}, {}, s).first, qs[1], 1e-6, 1e-7));
}

TEST(QNet, PlainHeadWithoutHiddenLayerHasNoStreams) {
  QNetSpec spec;
  spec.dueling = false;
  spec.head_hidden = 0;
  QNet net(spec, spec_of({3}, 2));
  EXPECT_NE(net->named_parameters().find("q_head.0.weight"), nullptr);
  EXPECT_EQ(net->named_parameters().find("value_head.0.weight"), nullptr);
  EXPECT_EQ(
      net->step(torch::randn({5, 3}), torch::zeros({5}, torch::kInt64), torch::zeros({5}), {}).first.sizes(),
      torch::IntArrayRef({5, 2}));
  EXPECT_THROW(
      net->forward_streams(torch::randn({1, 3}), torch::zeros({1}, torch::kInt64), torch::zeros({1}), {}),
      std::logic_error);
}

TEST(QNet, Uint8ObservationsAreScaledByOneOver255) {
  torch::manual_seed(8);
  QNet bytes(small_spec(), spec_of({3}, 4, envs::DType::kUInt8));
  QNet floats(small_spec(), spec_of({3}, 4));
  floats->copy_weights_from(*bytes);
  const torch::Tensor raw = torch::randint(0, 256, {2, 3}, torch::kUInt8);
  const torch::Tensor a = torch::tensor({1, 2});
  const torch::Tensor r = torch::zeros({2});
  EXPECT_TRUE(torch::allclose(
      bytes->step(raw, a, r, bytes->initial_state(2)).first,
      floats->step(raw.to(torch::kFloat32) / 255.0, a, r, floats->initial_state(2)).first, 1e-5, 1e-6));
}

TEST(QNet, ACloneStartsEqualAndStaysIndependentUntilCopiedAgain) {
  torch::manual_seed(9);
  QNet online(small_spec(), spec_of({3}, 4));
  QNet target = online->clone_net();
  const auto params = online->named_parameters();
  const auto copies = target->named_parameters();
  ASSERT_EQ(params.size(), copies.size());
  for (const auto& p : params) {
    EXPECT_TRUE(torch::equal(p.value(), copies[p.key()])) << p.key();
    EXPECT_NE(p.value().data_ptr(), copies[p.key()].data_ptr()) << p.key();
  }

  // An optimizer step on the online net leaves the target where it was.
  torch::optim::SGD sgd(online->parameters(), 0.1);
  const Sequence seq = random_sequence(2, 2);
  const QNetImpl::State state = random_state(2);
  const auto target_q = [&] {
    return target->unroll(seq.obs, seq.prev_action, seq.prev_reward, seq.reset, state).first;
  };
  const torch::Tensor before = target_q().detach();
  online->unroll(seq.obs, seq.prev_action, seq.prev_reward, seq.reset, state).first.pow(2).sum().backward();
  sgd.step();
  EXPECT_FALSE(torch::equal(params["lstm.weight_ih"], copies["lstm.weight_ih"]));
  EXPECT_TRUE(torch::equal(target_q(), before));
  for (const auto& p : target->named_parameters()) EXPECT_FALSE(p.value().grad().defined()) << p.key();

  target->copy_weights_from(*online);
  for (const auto& p : params) EXPECT_TRUE(torch::equal(p.value(), copies[p.key()])) << p.key();
}

TEST(QNet, CopyingWeightsBetweenDifferentNetsFailsNamingTheParameter) {
  QNet a(small_spec(), spec_of({3}, 4));
  QNet b(small_spec(), spec_of({3}, 5));
  // The LSTM reads the torso (8), the one-hot previous action (4 or 5) and the reward (1).
  EXPECT_EQ(error_text([&] { b->copy_weights_from(*a); }),
            "QNet::copy_weights_from: source tensor 'lstm.weight_ih' of shape [24, 13] differs from "
            "this net's [24, 14]");
}

TEST(QNet, RejectsABoxActionSpaceNamingIt) {
  envs::EnvSpec spec = spec_of({3}, 0);
  spec.action.kind = envs::SpaceKind::kBox;
  spec.action.shape = {2};
  const std::string error = error_text([&] { QNet net(small_spec(), spec); });
  EXPECT_NE(error.find("Discrete"), std::string::npos) << error;
  EXPECT_NE(error.find("Box action space of shape [2]"), std::string::npos) << error;
}

TEST(QNet, RejectsAWrongObservationShapeNamingBothShapes) {
  QNet net(small_spec(), spec_of({3}, 4));
  const std::string step_error = error_text([&] {
    net->step(torch::randn({2, 5}), torch::zeros({2}, torch::kInt64), torch::zeros({2}),
              net->initial_state(2));
  });
  EXPECT_NE(step_error.find("obs must be [B, 3]"), std::string::npos) << step_error;
  EXPECT_NE(step_error.find("got [2, 5]"), std::string::npos) << step_error;
  const std::string unroll_error = error_text([&] {
    net->unroll(torch::randn({4, 3}), torch::zeros({4}, torch::kInt64), torch::zeros({4}), torch::zeros({4}),
                net->initial_state(4));
  });
  EXPECT_NE(unroll_error.find("obs must be [T, B, 3]"), std::string::npos) << unroll_error;
  const std::string reset_error = error_text([&] {
    net->unroll(torch::randn({4, 2, 3}), torch::zeros({4, 2}, torch::kInt64), torch::zeros({4, 2}),
                torch::zeros({4}), net->initial_state(2));
  });
  EXPECT_NE(reset_error.find("reset must be a floating tensor of shape [4, 2]"), std::string::npos)
      << reset_error;
}

TEST(QNet, RejectsATorsoThatDoesNotFitTheObservation) {
  QNetSpec spec = small_spec();
  spec.torso = {LayerSpec{"conv2d", 8, 3, 1, 0}};
  const std::string error = error_text([&] { QNet net(spec, spec_of({3}, 4)); });
  EXPECT_NE(error.find("QNet torso: layer 1 conv2d"), std::string::npos) << error;
}

TEST(QNet, R2D2AtariSpecIsNatureCnnThenLstm512AndDuelingStreamsOf512) {
  const QNetSpec spec = r2d2_atari_spec();
  EXPECT_EQ(spec.torso, preset_layers("nature_cnn"));
  EXPECT_EQ(spec.lstm, 512);
  EXPECT_EQ(spec.head_hidden, 512);
  EXPECT_TRUE(spec.dueling);
  EXPECT_TRUE(spec.prev_action_reward);
  torch::manual_seed(10);
  QNet net(spec, spec_of({4, 84, 84}, 18, envs::DType::kUInt8));
  EXPECT_EQ(net->state_size(), 512);
  const auto [q, state] = net->step(torch::randint(0, 256, {1, 4, 84, 84}, torch::kUInt8),
                                    torch::tensor({-1}), torch::zeros({1}), net->initial_state(1));
  EXPECT_EQ(q.sizes(), torch::IntArrayRef({1, 18}));
  // conv 32x8/4, 64x4/2, 64x3/1 on 84x84 leave 64x7x7 = 3136 features for linear 512;
  // the LSTM reads those 512 + a one-hot of 18 actions + the reward.
  EXPECT_EQ(net->named_parameters()["lstm.weight_ih"].sizes(), torch::IntArrayRef({4 * 512, 512 + 18 + 1}));
}

}  // namespace
}  // namespace moonseed::models
