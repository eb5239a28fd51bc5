#include "engine/learner/optimizer.h"

#include <stdexcept>
#include <string>

#include <gtest/gtest.h>

namespace moonseed::engine {
namespace {

OptimizerConfig config_of(const std::string& kind) {
  OptimizerConfig config;
  config.kind = kind;
  config.lr = 0.1;
  return config;
}

// One gradient step of loss = sum(w * x) on w; returns how far w moved.
double step_once(torch::optim::Optimizer& optimizer, torch::Tensor& w) {
  const torch::Tensor before = w.detach().clone();
  optimizer.zero_grad();
  (w * torch::tensor({1.0f, -2.0f, 3.0f})).sum().backward();
  optimizer.step();
  return (w.detach() - before).abs().sum().item<double>();
}

TEST(MakeOptimizer, AdamAndRmspropBothStepTheParameters) {
  for (const std::string kind : {"adam", "rmsprop"}) {
    torch::Tensor w = torch::zeros({3}, torch::requires_grad());
    auto optimizer = make_optimizer(config_of(kind), {w});
    EXPECT_EQ(optimizer_kind(*optimizer), kind);
    EXPECT_GT(step_once(*optimizer, w), 0.0) << kind;
    // Gradient descent: w moves against the gradient (1, -2, 3).
    EXPECT_LT(w[0].item<double>(), 0.0) << kind;
    EXPECT_GT(w[1].item<double>(), 0.0) << kind;
  }
}

TEST(MakeOptimizer, RmspropUsesTheConfiguredAlphaEpsAndMomentum) {
  OptimizerConfig config = config_of("rmsprop");
  config.rmsprop_alpha = 0.9;
  config.rmsprop_momentum = 0.5;
  config.eps = 1e-3;
  torch::Tensor w = torch::zeros({3}, torch::requires_grad());
  auto optimizer = make_optimizer(config, {w});
  const auto& options =
      static_cast<const torch::optim::RMSpropOptions&>(optimizer->param_groups()[0].options());
  EXPECT_DOUBLE_EQ(options.alpha(), 0.9);
  EXPECT_DOUBLE_EQ(options.momentum(), 0.5);
  EXPECT_DOUBLE_EQ(options.eps(), 1e-3);
  EXPECT_DOUBLE_EQ(options.lr(), 0.1);
}

TEST(MakeOptimizer, UnknownKindIsRejectedByName) {
  torch::Tensor w = torch::zeros({3}, torch::requires_grad());
  try {
    make_optimizer(config_of("sgd-with-hope"), {w});
    ADD_FAILURE() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("sgd-with-hope"), std::string::npos) << e.what();
  }
}

TEST(SetLearningRate, TakesEffectOnTheNextStepForBothKinds) {
  for (const std::string kind : {"adam", "rmsprop"}) {
    torch::Tensor w = torch::zeros({3}, torch::requires_grad());
    auto optimizer = make_optimizer(config_of(kind), {w});
    set_learning_rate(*optimizer, 0.0);
    EXPECT_DOUBLE_EQ(optimizer->param_groups()[0].options().get_lr(), 0.0);
    EXPECT_EQ(step_once(*optimizer, w), 0.0) << kind << " moved with lr 0";
    set_learning_rate(*optimizer, 0.05);
    EXPECT_GT(step_once(*optimizer, w), 0.0) << kind << " did not move with lr 0.05";
  }
}

TEST(ClipGradNorm, ScalesGradientsDownToMaxNormAndReturnsThePreClipNorm) {
  torch::Tensor a = torch::zeros({2}, torch::requires_grad());
  torch::Tensor b = torch::zeros({1}, torch::requires_grad());
  a.mutable_grad() = torch::tensor({3.0f, 0.0f});
  b.mutable_grad() = torch::tensor({4.0f});  // global norm 5
  EXPECT_NEAR(clip_grad_norm({a, b}, 1.0), 5.0, 1e-6);
  EXPECT_NEAR(a.grad()[0].item<double>(), 0.6, 1e-6);
  EXPECT_NEAR(b.grad()[0].item<double>(), 0.8, 1e-6);
}

TEST(ClipGradNorm, LeavesGradientsBelowMaxNormAlone) {
  torch::Tensor a = torch::zeros({2}, torch::requires_grad());
  a.mutable_grad() = torch::tensor({3.0f, 4.0f});
  EXPECT_NEAR(clip_grad_norm({a}, 10.0), 5.0, 1e-6);
  EXPECT_TRUE(torch::equal(a.grad(), torch::tensor({3.0f, 4.0f})));
}

TEST(ClipGradNorm, MaxNormZeroDisablesClippingButStillMeasures) {
  torch::Tensor a = torch::zeros({2}, torch::requires_grad());
  a.mutable_grad() = torch::tensor({30.0f, 40.0f});
  EXPECT_NEAR(clip_grad_norm({a}, 0.0), 50.0, 1e-5);
  EXPECT_TRUE(torch::equal(a.grad(), torch::tensor({30.0f, 40.0f})));
}

TEST(ClipGradNorm, SkipsParametersWithoutGradient) {
  torch::Tensor a = torch::zeros({2}, torch::requires_grad());
  torch::Tensor unused = torch::zeros({2}, torch::requires_grad());
  a.mutable_grad() = torch::tensor({6.0f, 8.0f});
  EXPECT_NEAR(clip_grad_norm({a, unused}, 5.0), 10.0, 1e-5);
  EXPECT_NEAR(a.grad().norm().item<double>(), 5.0, 1e-5);
  EXPECT_FALSE(unused.grad().defined());
}

}  // namespace
}  // namespace moonseed::engine
