#include "engine/r2d2/r2d2.h"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

namespace moonseed::engine {
namespace {

using Column = std::vector<double>;

torch::Tensor column_tensor(const Column& c) { return torch::tensor(c, torch::kFloat64).unsqueeze(1); }

// [L, B] float64 from B columns of length L.
torch::Tensor matrix(const std::vector<Column>& columns) {
  std::vector<torch::Tensor> parts;
  for (const Column& c : columns) parts.push_back(column_tensor(c));
  return torch::cat(parts, 1);
}

Column column_of(const torch::Tensor& m, int64_t b) {
  const torch::Tensor c = m.select(1, b).contiguous().to(torch::kFloat64);
  return Column(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
}

// Bootstrap values v_s, handed over in h-space as the network outputs them.
Column h_space(const Column& v) {
  Column q;
  for (double x : v) q.push_back(value_rescale(x));
  return q;
}

void expect_targets(const NStepStreamTargets& got, const Column& y, const Column& mask) {
  ASSERT_EQ(got.targets.size(), y.size());
  for (size_t t = 0; t < y.size(); ++t) {
    EXPECT_EQ(got.mask[t], mask[t]) << "mask at t = " << t;
    const double want = mask[t] != 0 ? value_rescale(y[t]) : 0.0;
    EXPECT_NEAR(got.targets[t], want, 1e-9) << "target at t = " << t << " (y = " << y[t] << ")";
  }
}

// Rewards 1..6 and bootstrap values 10..60 (h-space inputs), n = 3, gamma = 0.5.
const Column kRewards = {1, 2, 3, 4, 5, 6};
const Column kValues = {10, 20, 30, 40, 50, 60};
const Column kZeros(6, 0.0);
const Column kOnes(6, 1.0);
const NStepParams kParams{3, 0.5, kValueRescaleEps};

NStepStream stream(Column rewards, Column terminated, Column truncated, Column valid) {
  return {std::move(rewards), std::move(terminated), std::move(truncated), std::move(valid),
          h_space(kValues)};
}

TEST(ValueRescale, MatchesHandValues) {
  EXPECT_DOUBLE_EQ(value_rescale(0.0), 0.0);
  EXPECT_NEAR(value_rescale(3.0), 1.0 + 0.003, 1e-12);    // sqrt(4) - 1 + 3 eps
  EXPECT_NEAR(value_rescale(-8.0), -2.0 - 0.008, 1e-12);  // -(sqrt(9) - 1) - 8 eps
  EXPECT_NEAR(value_rescale(99.0), 9.0 + 0.099, 1e-12);
  EXPECT_NEAR(value_rescale(3.0, 0.1), 1.3, 1e-12);
  EXPECT_NEAR(inverse_value_rescale(1.003), 3.0, 1e-9);
  EXPECT_NEAR(inverse_value_rescale(-2.008), -8.0, 1e-9);
  EXPECT_DOUBLE_EQ(inverse_value_rescale(0.0), 0.0);
}

TEST(ValueRescale, InverseUndoesItOverMinusToPlusTenThousand) {
  for (double x = -1e4; x <= 1e4; x += 12.5) {
    EXPECT_NEAR(inverse_value_rescale(value_rescale(x)), x, 1e-9 * (1 + std::abs(x))) << "x = " << x;
  }
  for (double x : {-1e-6, 1e-6, 0.5, -0.5, 1e4, -1e4}) {
    EXPECT_NEAR(value_rescale(inverse_value_rescale(x)), x, 1e-9 * (1 + std::abs(x))) << "x = " << x;
  }
}

TEST(ValueRescale, TensorVersionsAgreeWithTheDoubleOnes) {
  const torch::Tensor x = torch::linspace(-1e4, 1e4, 2001, torch::kFloat64);
  const torch::Tensor h = value_rescale(x);
  const torch::Tensor back = inverse_value_rescale(h);
  const torch::Tensor h32 = value_rescale(x.to(torch::kFloat32));
  for (int64_t i = 0; i < x.size(0); i += 37) {
    const double xi = x[i].item<double>();
    EXPECT_NEAR(h[i].item<double>(), value_rescale(xi), 1e-12);
    EXPECT_NEAR(back[i].item<double>(), inverse_value_rescale(value_rescale(xi)), 1e-9);
    EXPECT_NEAR(h32[i].item<double>(), value_rescale(xi), 1e-5 * (1 + std::abs(value_rescale(xi))));
  }
  EXPECT_TRUE(torch::allclose(back, x, 1e-10, 1e-8));
  EXPECT_TRUE(torch::allclose(inverse_value_rescale(h32), x.to(torch::kFloat32), 1e-5, 1e-3));
}

TEST(ValueRescale, RejectsANonPositiveEps) {
  EXPECT_THROW(value_rescale(1.0, 0.0), std::invalid_argument);
  EXPECT_THROW(inverse_value_rescale(torch::ones({2}), -1e-3), std::invalid_argument);
}

TEST(NStepTargets, WithoutEpisodeEndsSumNRewardsAndBootstrapNStepsAhead) {
  // y_0 = 1 + 0.5*2 + 0.25*3 + 0.125*v_3 = 2.75 + 5 = 7.75
  // y_1 = 2 + 0.5*3 + 0.25*4 + 0.125*v_4 = 4.5 + 6.25 = 10.75
  // y_2 = 3 + 0.5*4 + 0.25*5 + 0.125*v_5 = 6.25 + 7.5 = 13.75 (v_5 = x_{L-1} is still n steps ahead)
  const NStepStreamTargets got = n_step_targets(stream(kRewards, kZeros, kZeros, kOnes), kParams);
  for (size_t t = 0; t < 3; ++t) EXPECT_EQ(got.mask[t], 1.0);
  EXPECT_NEAR(got.targets[0], value_rescale(7.75), 1e-9);
  EXPECT_NEAR(got.targets[1], value_rescale(10.75), 1e-9);
  EXPECT_NEAR(got.targets[2], value_rescale(13.75), 1e-9);
}

TEST(NStepTargets, TheLastStepsOfTheStreamUseShorterReturnsAndTheLastStepHasNone) {
  // y_3 = 4 + 0.5*5 + 0.25*v_5 = 6.5 + 15 = 21.5;  y_4 = 5 + 0.5*v_5 = 35; r_5 is never summed.
  expect_targets(n_step_targets(stream(kRewards, kZeros, kZeros, kOnes), kParams),
                 {7.75, 10.75, 13.75, 21.5, 35, 0}, {1, 1, 1, 1, 1, 0});
}

TEST(NStepTargets, TerminationInsideTheWindowKeepsItsRewardAndDropsTheBootstrap) {
  // a_1 terminates; x_2 is the final observation (invalid, its reward 100 is never summed);
  // x_3 starts the next episode.
  //   y_0 = 1 + 0.5*2 = 2;  y_1 = 2;  y_3 = 21.5;  y_4 = 35
  expect_targets(
      n_step_targets(stream({1, 2, 100, 4, 5, 6}, {0, 1, 0, 0, 0, 0}, kZeros, {1, 1, 0, 1, 1, 1}), kParams),
      {2, 2, 0, 21.5, 35, 0}, {1, 1, 0, 1, 1, 0});
}

TEST(NStepTargets, TruncationInsideTheWindowBootstrapsFromTheFinalObservation) {
  // a_1 truncates: bootstrap from x_2 (the final observation, v_2 = 30).
  //   y_0 = 1 + 0.5*2 + 0.25*30 = 9.5;  y_1 = 2 + 0.5*30 = 17
  expect_targets(
      n_step_targets(stream({1, 2, 100, 4, 5, 6}, kZeros, {0, 1, 0, 0, 0, 0}, {1, 1, 0, 1, 1, 1}), kParams),
      {9.5, 17, 0, 21.5, 35, 0}, {1, 1, 0, 1, 1, 0});
}

TEST(NStepTargets, TerminationWinsOverTruncationOnTheSameStep) {
  const Column ended = {0, 1, 0, 0, 0, 0};
  expect_targets(n_step_targets(stream({1, 2, 100, 4, 5, 6}, ended, ended, {1, 1, 0, 1, 1, 1}), kParams),
                 {2, 2, 0, 21.5, 35, 0}, {1, 1, 0, 1, 1, 0});
}

TEST(NStepTargets, OneStepTargetsAreRewardPlusDiscountedBootstrap) {
  const NStepParams one{1, 0.5, kValueRescaleEps};
  // y_t = r_t + 0.5 v_{t+1}: 1 + 10, 2 + 15, 3 + 20, 4 + 25, 5 + 30.
  expect_targets(n_step_targets(stream(kRewards, kZeros, kZeros, kOnes), one), {11, 17, 23, 29, 35, 0},
                 {1, 1, 1, 1, 1, 0});
}

TEST(NStepTargets, TensorVersionComputesEachColumnLikeItsOwnStream) {
  // Column 0: no end; 1: termination at step 1; 2: truncation at step 1; 3: invalid first step.
  const std::vector<NStepStream> columns = {
      stream(kRewards, kZeros, kZeros, kOnes),
      stream({1, 2, 100, 4, 5, 6}, {0, 1, 0, 0, 0, 0}, kZeros, {1, 1, 0, 1, 1, 1}),
      stream({1, 2, 100, 4, 5, 6}, kZeros, {0, 1, 0, 0, 0, 0}, {1, 1, 0, 1, 1, 1}),
      stream({0, 2, 3, 4, 5, 6}, kZeros, kZeros, {0, 1, 1, 1, 1, 1}),
  };
  const std::vector<Column> want_y = {{7.75, 10.75, 13.75, 21.5, 35, 0},
                                      {2, 2, 0, 21.5, 35, 0},
                                      {9.5, 17, 0, 21.5, 35, 0},
                                      {0, 10.75, 13.75, 21.5, 35, 0}};
  const std::vector<Column> want_mask = {
      {1, 1, 1, 1, 1, 0}, {1, 1, 0, 1, 1, 0}, {1, 1, 0, 1, 1, 0}, {0, 1, 1, 1, 1, 0}};
  std::vector<Column> rewards, terminated, truncated, valid, bootstrap;
  for (const NStepStream& s : columns) {
    rewards.push_back(s.rewards);
    terminated.push_back(s.terminated);
    truncated.push_back(s.truncated);
    valid.push_back(s.valid);
    bootstrap.push_back(s.bootstrap_q);
  }
  const NStepTargets got = n_step_targets(
      {matrix(rewards), matrix(terminated), matrix(truncated), matrix(valid), matrix(bootstrap)}, kParams);
  ASSERT_EQ(got.targets.sizes(), torch::IntArrayRef({6, 4}));
  ASSERT_EQ(got.mask.sizes(), torch::IntArrayRef({6, 4}));
  for (int64_t b = 0; b < 4; ++b) {
    SCOPED_TRACE("column " + std::to_string(b));
    expect_targets({column_of(got.targets, b), column_of(got.mask, b)}, want_y[b], want_mask[b]);
  }
}

TEST(NStepTargets, TensorAndDoubleVersionsAgreeOnRandomStreams) {
  torch::manual_seed(7);
  const int64_t L = 23, B = 6;
  auto flags = [&](double p) { return (torch::rand({L, B}, torch::kFloat64) < p).to(torch::kFloat64); };
  NStepInput in{torch::randn({L, B}, torch::kFloat64), flags(0.1), flags(0.1), flags(0.85),
                torch::randn({L, B}, torch::kFloat64) * 5};
  const NStepParams params{5, 0.9, kValueRescaleEps};
  const NStepTargets got = n_step_targets(in, params);
  EXPECT_GT(got.mask.sum().item<double>(), L);  // the flags leave plenty of targets to compare
  for (int64_t b = 0; b < B; ++b) {
    const NStepStreamTargets want = n_step_targets(
        NStepStream{column_of(in.rewards, b), column_of(in.terminated, b), column_of(in.truncated, b),
                    column_of(in.valid, b), column_of(in.bootstrap_q, b)},
        params);
    const Column targets = column_of(got.targets, b);
    const Column mask = column_of(got.mask, b);
    for (int64_t t = 0; t < L; ++t) {
      EXPECT_EQ(mask[t], want.mask[t]) << "b = " << b << ", t = " << t;
      EXPECT_NEAR(targets[t], want.targets[t], 1e-10) << "b = " << b << ", t = " << t;
    }
  }
}

TEST(NStepTargets, Float32TensorsGiveFloat32TargetsWithoutGradient) {
  const torch::Tensor q = torch::zeros({4, 2}, torch::requires_grad());
  const torch::Tensor zeros = torch::zeros({4, 2});
  const NStepTargets got =
      n_step_targets({torch::ones({4, 2}), zeros, zeros, torch::ones({4, 2}), q}, kParams);
  EXPECT_EQ(got.targets.scalar_type(), torch::kFloat32);
  EXPECT_FALSE(got.targets.requires_grad());
  // y_0 = 1 + 0.5 + 0.25 = 1.75 (v = 0 everywhere)
  EXPECT_NEAR(got.targets[0][1].item<double>(), value_rescale(1.75), 1e-6);
}

TEST(NStepTargets, RejectsMismatchedInputsAndBadParametersNamingThem) {
  const torch::Tensor m = torch::zeros({5, 2});
  try {
    n_step_targets({m, m, m, torch::zeros({5}), m}, kParams);
    FAIL() << "expected invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("valid"), std::string::npos) << e.what();
  }
  EXPECT_THROW(n_step_targets({m, m, m, m, m.to(torch::kFloat64)}, kParams), std::invalid_argument);
  EXPECT_THROW(n_step_targets({m, m, m, m, m}, NStepParams{0, 0.5, 1e-3}), std::invalid_argument);
  EXPECT_THROW(n_step_targets({m, m, m, m, m}, NStepParams{3, 1.5, 1e-3}), std::invalid_argument);
  try {
    n_step_targets(NStepStream{{1, 2}, {0, 0}, {0}, {1, 1}, {0, 0}}, kParams);
    FAIL() << "expected invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("truncated has length 1"), std::string::npos) << e.what();
  }
}

// Two sequences of L = 4 with burn_in 1 (t = 0 carries no loss):
//   0: delta over t = 1..3 = {1, 2, 2}      -> loss 0.5 (1 + 4 + 4) / 3 = 1.5,
//      priority 0.9 * 2 + 0.1 * 5/3
//   1: delta = {4, (masked), 2}             -> loss 0.5 (16 + 4) / 2 = 5, priority 0.9 * 4 + 0.1 * 3
TdInput two_sequences() {
  TdInput in;
  in.targets = matrix({{9, 1, 2, 3}, {0, 4, 0, 1}});
  in.q_taken = matrix({{0, 0, 0, 1}, {5, 0, 7, -1}}).requires_grad_();
  in.mask = matrix({{1, 1, 1, 1}, {1, 1, 0, 1}});
  in.burn_in = 1;
  return in;
}

TEST(R2D2Loss, IsTheMeanOverMaskedTraceStepsPerSequenceWeightedThenAveragedOverTheBatch) {
  const TdInput in = two_sequences();
  const torch::Tensor losses = sequence_losses(in);
  EXPECT_NEAR(losses[0].item<double>(), 1.5, 1e-12);
  EXPECT_NEAR(losses[1].item<double>(), 5.0, 1e-12);
  const torch::Tensor loss = r2d2_loss(in, torch::tensor({1.0, 0.5}, torch::kFloat64));
  EXPECT_NEAR(loss.item<double>(), (1.5 + 0.5 * 5) / 2, 1e-12);
  EXPECT_NEAR(r2d2_loss(in, {}).item<double>(), (1.5 + 5) / 2, 1e-12);
}

TEST(R2D2Loss, GradientReachesOnlyMaskedTraceStepsOfQTaken) {
  const TdInput in = two_sequences();
  r2d2_loss(in, torch::tensor({1.0, 0.5}, torch::kFloat64)).backward();
  // d/dq = -w_b / B / count_b * delta: column 0: -1/6 {1, 2, 2}; column 1: -0.5/4 {4, 0, 2}.
  const torch::Tensor want = matrix({{0, -1.0 / 6, -2.0 / 6, -2.0 / 6}, {0, -0.5, 0, -0.25}});
  EXPECT_TRUE(torch::allclose(in.q_taken.grad(), want, 0, 1e-12)) << in.q_taken.grad();
}

TEST(R2D2Loss, DoubleVersionMatchesTheTensorOne) {
  EXPECT_NEAR(sequence_loss({{9, 1, 2, 3}, {0, 0, 0, 1}, {1, 1, 1, 1}, 1}), 1.5, 1e-12);
  EXPECT_NEAR(sequence_loss({{0, 4, 0, 1}, {5, 0, 7, -1}, {1, 1, 0, 1}, 1}), 5.0, 1e-12);
  EXPECT_NEAR(sequence_loss({{9, 1, 2, 3}, {0, 0, 0, 1}, {1, 1, 1, 1}, 0}), (81.0 + 9) / 2 / 4, 1e-12);
}

TEST(R2D2Loss, ASequenceWithNoMaskedTraceStepContributesZero) {
  TdInput in = two_sequences();
  in.mask = matrix({{1, 0, 0, 0}, {1, 1, 0, 1}});
  EXPECT_NEAR(sequence_losses(in)[0].item<double>(), 0.0, 0);
  EXPECT_NEAR(sequence_priorities(in)[0].item<double>(), 0.0, 0);
  EXPECT_EQ(sequence_priority({{9, 1}, {0, 0}, {1, 0}, 1}), 0.0);
  EXPECT_EQ(sequence_loss({{9, 1}, {0, 0}, {1, 1}, 2}), 0.0);
}

TEST(R2D2Loss, RejectsBadBurnInAndWeightsNamingThem) {
  TdInput in = two_sequences();
  in.burn_in = 5;
  EXPECT_THROW(sequence_losses(in), std::invalid_argument);
  in.burn_in = 1;
  try {
    r2d2_loss(in, torch::ones({3}, torch::kFloat64));
    FAIL() << "expected invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("importance_weights"), std::string::npos) << e.what();
  }
}

TEST(SequencePriorities, MixMaxAndMeanAbsoluteErrorWithEta) {
  const torch::Tensor p = sequence_priorities(two_sequences());
  EXPECT_FALSE(p.requires_grad());
  EXPECT_NEAR(p[0].item<double>(), 0.9 * 2 + 0.1 * 5.0 / 3, 1e-12);
  EXPECT_NEAR(p[1].item<double>(), 0.9 * 4 + 0.1 * 3, 1e-12);
  EXPECT_NEAR(sequence_priority({{9, 1, 2, 3}, {0, 0, 0, 1}, {1, 1, 1, 1}, 1}), 0.9 * 2 + 0.1 * 5.0 / 3,
              1e-12);
  EXPECT_NEAR(sequence_priority({{0, 4, 0, 1}, {5, 0, 7, -1}, {1, 1, 0, 1}, 1}, 0.5), 0.5 * 4 + 0.5 * 3,
              1e-12);
  // Burn-in excluded: with it the error 9 of step 0 would dominate.
  EXPECT_NEAR(sequence_priority({{9, 1, 2, 3}, {0, 0, 0, 1}, {1, 1, 1, 1}, 0}), 0.9 * 9 + 0.1 * 14.0 / 4,
              1e-12);
  EXPECT_THROW(sequence_priority({{1}, {0}, {1}, 0}, 1.5), std::invalid_argument);
}

TEST(SequencePriorities, BurnInOfTheWholeSequenceGivesZero) {
  TdInput in = two_sequences();
  in.burn_in = 4;
  EXPECT_TRUE(torch::equal(sequence_priorities(in), torch::zeros({2}, torch::kFloat64)));
  EXPECT_TRUE(torch::equal(sequence_losses(in).detach(), torch::zeros({2}, torch::kFloat64)));
}

TEST(ApeXEpsilon, RunsFromBaseToBaseToTheEighth) {
  EXPECT_DOUBLE_EQ(ape_x_epsilon(0, 8), 0.4);
  EXPECT_NEAR(ape_x_epsilon(7, 8), std::pow(0.4, 8), 1e-15);
  EXPECT_NEAR(ape_x_epsilon(1, 3), std::pow(0.4, 4.5), 1e-15);
  EXPECT_DOUBLE_EQ(ape_x_epsilon(0, 1), 0.4);
  EXPECT_NEAR(ape_x_epsilon(2, 3, 0.5, 2), 0.125, 1e-15);
}

TEST(ApeXEpsilon, RejectsAnIndexOutsideTheEnvs) {
  EXPECT_THROW(ape_x_epsilon(8, 8), std::invalid_argument);
  EXPECT_THROW(ape_x_epsilon(-1, 8), std::invalid_argument);
  EXPECT_THROW(ape_x_epsilon(0, 0), std::invalid_argument);
}

}  // namespace
}  // namespace moonseed::engine
