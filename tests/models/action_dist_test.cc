#include "models/action_dist.h"

#include <cmath>
#include <stdexcept>

#include <gtest/gtest.h>

namespace moonseed::models {
namespace {

const double kLogTwoPi = std::log(2.0 * 3.14159265358979323846);

PolicyOutput categorical(torch::Tensor logits) {
  PolicyOutput out;
  out.logits_or_mean = std::move(logits);
  out.value = torch::zeros({out.logits_or_mean.size(0)});
  return out;
}

PolicyOutput gaussian(torch::Tensor mean, torch::Tensor log_std) {
  PolicyOutput out;
  out.logits_or_mean = std::move(mean);
  out.log_std = std::move(log_std);
  out.value = torch::zeros({out.logits_or_mean.size(0)});
  return out;
}

TEST(ActionDist, DiscreteSamplesAreInt64IndicesWithMatchingLogProb) {
  torch::manual_seed(11);
  const PolicyOutput out = categorical(torch::randn({64, 5}));
  const ActionSample s = sample(out);
  EXPECT_EQ(s.actions.scalar_type(), torch::kInt64);
  EXPECT_EQ(s.actions.sizes(), torch::IntArrayRef({64}));
  EXPECT_GE(s.actions.min().item<int64_t>(), 0);
  EXPECT_LT(s.actions.max().item<int64_t>(), 5);
  EXPECT_TRUE(torch::allclose(log_prob(out, s.actions), s.logp));
}

TEST(ActionDist, DiscreteSamplingFollowsTheSoftmaxProbabilities) {
  torch::manual_seed(12);
  const int64_t n = 20000;
  const PolicyOutput out = categorical(
      torch::tensor({std::log(0.8f), std::log(0.2f)}).unsqueeze(0).expand({n, 2}).contiguous());
  const double ones = sample(out).actions.to(torch::kFloat64).sum().item<double>();
  // Binomial(20000, 0.2): sd ~ 57 samples; 0.015 * n is over 5 sd.
  EXPECT_NEAR(ones / n, 0.2, 0.015);
}

TEST(ActionDist, GaussianSamplesAreFloat32VectorsWithMatchingLogProb) {
  torch::manual_seed(13);
  const PolicyOutput out =
      gaussian(torch::randn({32, 3}), torch::full({1, 3}, -0.3).expand({32, 3}));
  const ActionSample s = sample(out);
  EXPECT_EQ(s.actions.scalar_type(), torch::kFloat32);
  EXPECT_EQ(s.actions.sizes(), torch::IntArrayRef({32, 3}));
  EXPECT_FALSE(s.actions.requires_grad());
  EXPECT_EQ(s.logp.sizes(), torch::IntArrayRef({32}));
  EXPECT_TRUE(torch::allclose(log_prob(out, s.actions), s.logp));
}

TEST(ActionDist, SampledActionsCarryNoGradient) {
  const torch::Tensor logits = torch::randn({4, 3}, torch::requires_grad());
  EXPECT_FALSE(sample(categorical(logits)).actions.requires_grad());
}

TEST(ActionDist, UniformCategoricalEntropyIsLogN) {
  const PolicyOutput out = categorical(torch::full({3, 7}, 0.25));
  const torch::Tensor h = entropy(out);
  EXPECT_EQ(h.sizes(), torch::IntArrayRef({3}));
  for (int64_t i = 0; i < 3; ++i) EXPECT_NEAR(h[i].item<double>(), std::log(7.0), 1e-6);
}

TEST(ActionDist, CategoricalLogProbIsTheLogSoftmaxOfTheChosenAction) {
  // logits (0, log 3): probabilities (1/4, 3/4).
  const PolicyOutput out = categorical(torch::tensor({{0.0f, std::log(3.0f)}}));
  EXPECT_NEAR(log_prob(out, torch::tensor({int64_t{1}})).item<double>(), std::log(0.75), 1e-6);
  EXPECT_NEAR(log_prob(out, torch::tensor({int64_t{0}})).item<double>(), std::log(0.25), 1e-6);
}

TEST(ActionDist, GaussianLogProbMatchesTheClosedForm) {
  // mean (0.5, -1), log std (0, log 2), action (1, 0):
  //   dim 0: z = 0.5,      -0.5 * 0.25  - 0     - log(2 pi)/2
  //   dim 1: z = 1/2 = 0.5, -0.5 * 0.25 - log 2 - log(2 pi)/2
  const PolicyOutput out = gaussian(torch::tensor({{0.5f, -1.0f}}),
                                    torch::tensor({{0.0f, static_cast<float>(std::log(2.0))}}));
  const double want = -0.25 - std::log(2.0) - kLogTwoPi;
  EXPECT_NEAR(log_prob(out, torch::tensor({{1.0f, 0.0f}})).item<double>(), want, 1e-6);
}

TEST(ActionDist, GaussianEntropyMatchesTheClosedForm) {
  // Per dimension 1/2 + log(2 pi)/2 + log sigma; sigmas (1, e^-1).
  const PolicyOutput out =
      gaussian(torch::zeros({2, 2}), torch::tensor({{0.0f, -1.0f}, {0.0f, -1.0f}}));
  const torch::Tensor h = entropy(out);
  const double want = 2 * (0.5 + 0.5 * kLogTwoPi) - 1.0;
  EXPECT_NEAR(h[0].item<double>(), want, 1e-6);
  EXPECT_NEAR(h[1].item<double>(), want, 1e-6);
}

TEST(ActionDist, RejectsActionsOfTheWrongShapeOrType) {
  const PolicyOutput cat = categorical(torch::zeros({4, 3}));
  EXPECT_THROW(log_prob(cat, torch::zeros({4}, torch::kFloat32)), std::invalid_argument);
  EXPECT_THROW(log_prob(cat, torch::zeros({3}, torch::kInt64)), std::invalid_argument);
  const PolicyOutput gauss = gaussian(torch::zeros({4, 2}), torch::zeros({4, 2}));
  EXPECT_THROW(log_prob(gauss, torch::zeros({4, 3})), std::invalid_argument);
}

}  // namespace
}  // namespace moonseed::models
