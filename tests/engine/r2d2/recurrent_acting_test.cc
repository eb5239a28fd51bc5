#include "engine/r2d2/recurrent_acting.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "engine/r2d2/r2d2.h"
#include "tests/error_text.h"

namespace moonseed::engine {
namespace {

using test::error_text;

constexpr int64_t kLstm = 5;

models::QNet make_net(int64_t lstm, int64_t actions = 3) {
  torch::manual_seed(3);
  envs::EnvSpec spec;
  spec.id = "Test-v0";
  spec.observation.kind = envs::SpaceKind::kBox;
  spec.observation.dtype = envs::DType::kFloat32;
  spec.observation.shape = {2};
  spec.action.kind = envs::SpaceKind::kDiscrete;
  spec.action.n = actions;
  models::QNetSpec q;
  q.torso = {models::LayerSpec{"linear", 8}, models::LayerSpec{"relu"}};
  q.lstm = lstm;
  q.head_hidden = 8;
  return models::QNet(q, spec);
}

torch::Tensor ones_or_zeros(int64_t n, int value) { return torch::full({n}, value, torch::kUInt8); }

struct Call {
  torch::Tensor obs, prev_action, prev_reward;
};

Call call_of(int64_t n) {
  return {torch::randn({n, 2}), torch::randint(0, 3, {n}, torch::kInt64), torch::randn({n})};
}

TEST(RecurrentActing, GreedyActionsFollowTheNetAndEachSlotKeepsItsOwnState) {
  models::QNet net = make_net(kLstm);
  RecurrentActing acting(std::vector<double>(2, 0.0), kLstm, torch::kCPU, 1);
  // Slot 0 steps four times, interleaved with slot 1 on other inputs.
  std::vector<Call> calls;
  std::vector<torch::Tensor> q0;
  for (int t = 0; t < 4; ++t) {
    calls.push_back(call_of(1));
    ActingDecision d = acting.act(*net, {0}, calls.back().obs, calls.back().prev_action, calls.back().prev_reward,
                                  ones_or_zeros(1, t == 0));
    EXPECT_EQ(d.actions[0].item<int64_t>(), d.q[0].argmax().item<int64_t>());
    EXPECT_EQ(d.explored, 0);
    q0.push_back(d.q);
    const Call other = call_of(1);
    acting.act(*net, {1}, other.obs, other.prev_action, other.prev_reward, ones_or_zeros(1, t == 0));
  }
  // The same four steps as one unroll from the zero state.
  std::vector<torch::Tensor> obs, pa, pr;
  for (const Call& c : calls) {
    obs.push_back(c.obs);
    pa.push_back(c.prev_action);
    pr.push_back(c.prev_reward);
  }
  torch::NoGradGuard no_grad;
  const torch::Tensor q = net->unroll(torch::stack(obs), torch::stack(pa), torch::stack(pr), torch::zeros({4, 1}),
                                      net->initial_state(1)).first;
  for (int t = 0; t < 4; ++t) EXPECT_TRUE(torch::allclose(q[t], q0[static_cast<size_t>(t)], 1e-5, 1e-6)) << t;
}

TEST(RecurrentActing, AResetStartsTheSlotFromTheZeroStateAndReturnsTheStateActedOn) {
  models::QNet net = make_net(kLstm);
  RecurrentActing acting(std::vector<double>(3, 0.0), kLstm, torch::kCPU, 1);
  for (int t = 0; t < 3; ++t) {
    const Call c = call_of(3);
    acting.act(*net, {0, 1, 2}, c.obs, c.prev_action, c.prev_reward, ones_or_zeros(3, t == 0));
  }
  const Call c = call_of(3);
  torch::Tensor reset = torch::tensor({0, 1, 0}, torch::kUInt8);
  const ActingDecision d = acting.act(*net, {0, 1, 2}, c.obs, c.prev_action, c.prev_reward, reset);
  EXPECT_EQ(d.h.sizes(), (torch::IntArrayRef{3, kLstm}));
  EXPECT_EQ(d.h[1].abs().sum().item<double>(), 0.0);
  EXPECT_EQ(d.c[1].abs().sum().item<double>(), 0.0);
  EXPECT_GT(d.h[0].abs().sum().item<double>(), 0.0);
  torch::NoGradGuard no_grad;
  const torch::Tensor fresh =
      net->step(c.obs.narrow(0, 1, 1), c.prev_action.narrow(0, 1, 1), c.prev_reward.narrow(0, 1, 1),
                net->initial_state(1)).first;
  EXPECT_TRUE(torch::allclose(d.q.narrow(0, 1, 1), fresh, 1e-5, 1e-6));

  // reset_slot zeroes the kept state too: slot 2 without a reset flag now acts from zeros.
  acting.reset_slot(2);
  const ActingDecision after = acting.act(*net, {2}, c.obs.narrow(0, 2, 1), c.prev_action.narrow(0, 2, 1),
                                          c.prev_reward.narrow(0, 2, 1), ones_or_zeros(1, 0));
  EXPECT_EQ(after.h.abs().sum().item<double>(), 0.0);
}

TEST(RecurrentActing, EachSlotExploresWithItsOwnEpsilonAndRandomActionsAreUniform) {
  models::QNet net = make_net(0);
  // Slot 0 always explores, slot 1 never, slot 2 at Ape-X's epsilon of env 1 of 3 (0.4^4.5).
  RecurrentActing acting({1.0, 0.0, ape_x_epsilon(1, 3)}, 0, torch::kCPU, 42);
  std::vector<int64_t> counts(3, 0);
  int64_t explored_by_2 = 0;
  const int rounds = 3000;
  for (int i = 0; i < rounds; ++i) {
    const Call c = call_of(1);
    const ActingDecision any = acting.act(*net, {0}, c.obs, c.prev_action, c.prev_reward, ones_or_zeros(1, 0));
    EXPECT_EQ(any.explored, 1);
    counts[static_cast<size_t>(any.actions[0].item<int64_t>())] += 1;
    const ActingDecision never = acting.act(*net, {1}, c.obs, c.prev_action, c.prev_reward, ones_or_zeros(1, 0));
    EXPECT_EQ(never.explored, 0);
    explored_by_2 += acting.act(*net, {2}, c.obs, c.prev_action, c.prev_reward, ones_or_zeros(1, 0)).explored;
  }
  // Binomial(3000, 1/3): sd 26; 5 sd either side.
  for (int64_t n : counts) EXPECT_NEAR(static_cast<double>(n), rounds / 3.0, 130) << n;
  // 0.4^4.5 = 0.0162: about 49 of 3000, sd 7.
  EXPECT_NEAR(static_cast<double>(explored_by_2), 3000 * ape_x_epsilon(1, 3), 35);
}

TEST(RecurrentActing, BadSlotsEpsilonsAndSizesAreNamed) {
  models::QNet net = make_net(kLstm);
  EXPECT_EQ(error_text([] { RecurrentActing({0.5, 1.5}, kLstm, torch::kCPU, 0); }),
            "RecurrentActing: slot 1: epsilon must be in [0, 1], got 1.5");
  RecurrentActing acting({0.1, 0.1}, kLstm, torch::kCPU, 0);
  const Call c = call_of(1);
  EXPECT_EQ(error_text([&] { acting.act(*net, {2}, c.obs, c.prev_action, c.prev_reward, ones_or_zeros(1, 0)); }),
            "RecurrentActing::act: slot 2 outside [0, 2)");
  EXPECT_EQ(error_text([&] { acting.act(*net, {0}, c.obs, torch::zeros({2}, torch::kInt64), c.prev_reward,
                                      ones_or_zeros(1, 0)); }),
            "RecurrentActing::act: prev_action must be [1] (one per slot), got [2]");
  models::QNet other = make_net(kLstm + 1);
  EXPECT_EQ(error_text([&] { acting.act(*other, {0}, c.obs, c.prev_action, c.prev_reward, ones_or_zeros(1, 0)); }),
            "RecurrentActing::act: the net's LSTM has 6 units, the states kept here 5");
  EXPECT_EQ(error_text([&] { acting.set_epsilon(0, -0.1); }),
            "RecurrentActing::set_epsilon: slot 0: epsilon must be in [0, 1], got -0.1");
}

}  // namespace
}  // namespace moonseed::engine
