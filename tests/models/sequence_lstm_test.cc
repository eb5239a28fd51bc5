// lstm_sequence (models/sequence_lstm.h): its three kernels against one another and
// against LibTorch's LSTMCell, forward and every gradient, with episode resets anywhere.
#include "models/sequence_lstm.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace moonseed::models {
namespace {

struct Case {
  torch::Tensor x, h0, c0, keep;
  LstmWeights w;
};

// Sizes T, B, I, H; keep zero at (t, b) pairs, including t = 0 and several in one sequence.
Case make_case(torch::Dtype dtype, int64_t T = 9, int64_t B = 5, int64_t I = 7, int64_t H = 6, uint64_t seed = 1) {
  torch::manual_seed(seed);
  const auto o = torch::TensorOptions().dtype(dtype);
  Case c;
  c.x = torch::randn({T, B, I}, o);
  c.h0 = torch::randn({B, H}, o);
  c.c0 = torch::randn({B, H}, o);
  c.keep = torch::ones({T, B}, o);
  for (const auto& [t, b] : std::vector<std::pair<int64_t, int64_t>>{{0, 1}, {3, 0}, {3, 2}, {6, 0}, {T - 1, 4}}) {
    if (t < T && b < B) c.keep.index_put_({t, b}, 0);
  }
  c.w = {torch::randn({4 * H, I}, o) * 0.4, torch::randn({4 * H, H}, o) * 0.4, torch::randn({4 * H}, o) * 0.2,
         torch::randn({4 * H}, o) * 0.2};
  return c;
}

// Every value and gradient a kernel produces for a fixed weighted sum of its outputs.
struct Result {
  std::vector<torch::Tensor> values;  // out, h, c, then the gradients of x, h0, c0, w_ih, w_hh, b_ih, b_hh
};

Result run(const Case& base, LstmKernel kernel, bool with_keep = true) {
  Case c = base;
  std::vector<torch::Tensor*> leaves{&c.x, &c.h0, &c.c0, &c.w.w_ih, &c.w.w_hh, &c.w.b_ih, &c.w.b_hh};
  for (torch::Tensor* t : leaves) *t = t->detach().clone().set_requires_grad(true);
  const LstmSequence r = lstm_sequence(c.x, c.h0, c.c0, with_keep ? c.keep : torch::Tensor(), c.w, kernel);
  torch::manual_seed(99);  // the same weights of the sum for every kernel
  const torch::Tensor loss = (r.out * torch::randn_like(r.out)).sum() + (r.h * torch::randn_like(r.h)).sum() +
                             (r.c * torch::randn_like(r.c)).sum();
  loss.backward();
  Result result{{r.out.detach(), r.h.detach(), r.c.detach()}};
  for (torch::Tensor* t : leaves) result.values.push_back(t->grad());
  return result;
}

void expect_equal(const Result& a, const Result& b, double tolerance, const std::string& what) {
  const char* names[] = {"out", "h", "c", "dx", "dh0", "dc0", "dw_ih", "dw_hh", "db_ih", "db_hh"};
  ASSERT_EQ(a.values.size(), b.values.size());
  for (size_t k = 0; k < a.values.size(); ++k) {
    ASSERT_TRUE(a.values[k].defined() && b.values[k].defined()) << what << ": " << names[k];
    const double diff = (a.values[k] - b.values[k]).abs().max().item<double>();
    EXPECT_LE(diff, tolerance) << what << ": " << names[k] << " differs by " << diff;
  }
}

TEST(LstmSequence, EveryKernelGivesLstmCellsValuesAndGradientsWithResetsAnywhere) {
  for (torch::Dtype dtype : {torch::kFloat64, torch::kFloat32}) {
    const double tolerance = dtype == torch::kFloat64 ? 1e-12 : 2e-5;
    const Case c = make_case(dtype);
    const Result reference = run(c, LstmKernel::kStepwise);
    expect_equal(run(c, LstmKernel::kSplit), reference, tolerance, "split");
    expect_equal(run(c, LstmKernel::kFused), reference, tolerance, "fused");
    expect_equal(run(c, LstmKernel::kAuto), reference, tolerance, "auto");
  }
}

TEST(LstmSequence, WithoutResetsEveryKernelAgreesAndEqualsAnAllOnesKeep) {
  Case c = make_case(torch::kFloat64, 12, 3, 4, 5, 2);
  const Result reference = run(c, LstmKernel::kStepwise, /*with_keep=*/false);
  expect_equal(run(c, LstmKernel::kSplit, false), reference, 1e-12, "split");
  expect_equal(run(c, LstmKernel::kFused, false), reference, 1e-12, "fused");
  c.keep = torch::ones_like(c.keep);
  expect_equal(run(c, LstmKernel::kFused, true), reference, 1e-12, "fused, keep of ones");
}

TEST(LstmSequence, LargerSizesSplitOverThreadsGiveTheSameResult) {
  at::set_num_threads(2);
  const Case c = make_case(torch::kFloat64, 6, 70, 33, 130, 3);
  expect_equal(run(c, LstmKernel::kFused), run(c, LstmKernel::kStepwise), 1e-11, "fused, large");
  at::set_num_threads(1);
}

TEST(LstmSequence, AResetMakesEverythingAfterItIndependentOfWhatCameBefore) {
  Case c = make_case(torch::kFloat32);
  // Sequence 0 resets before step 3: perturbing its steps 0..2 and its start state changes
  // nothing from step 3 on. Sequence 3 never resets: the same perturbation changes its later steps.
  const LstmSequence before = lstm_sequence(c.x, c.h0, c.c0, c.keep, c.w, LstmKernel::kFused);
  Case d = c;
  d.x = c.x.clone();
  d.h0 = c.h0.clone();
  d.x.narrow(0, 0, 3).select(1, 0).add_(5);
  d.h0[0].add_(3);
  d.x.narrow(0, 0, 3).select(1, 3).add_(5);
  const LstmSequence after = lstm_sequence(d.x, d.h0, d.c0, d.keep, d.w, LstmKernel::kFused);
  EXPECT_TRUE(torch::equal(before.out.narrow(0, 3, 6).select(1, 0), after.out.narrow(0, 3, 6).select(1, 0)));
  EXPECT_FALSE(torch::allclose(before.out.narrow(0, 3, 6).select(1, 3), after.out.narrow(0, 3, 6).select(1, 3)));
}

TEST(LstmSequence, WithoutGradModeTheFusedKernelGivesTheSameValues) {
  const Case c = make_case(torch::kFloat32);
  const LstmSequence with = lstm_sequence(c.x, c.h0, c.c0, c.keep, c.w, LstmKernel::kFused);
  torch::NoGradGuard no_grad;
  const LstmSequence without = lstm_sequence(c.x, c.h0, c.c0, c.keep, c.w, LstmKernel::kFused);
  EXPECT_TRUE(torch::equal(with.out, without.out));
  EXPECT_TRUE(torch::equal(with.c, without.c));
  EXPECT_FALSE(without.out.requires_grad());
}

TEST(LstmSequence, AnEmptySequenceReturnsTheStartState) {
  const Case c = make_case(torch::kFloat32);
  const LstmSequence r = lstm_sequence(c.x.narrow(0, 0, 0), c.h0, c.c0, torch::Tensor(), c.w);
  EXPECT_EQ(r.out.sizes(), torch::IntArrayRef({0, 5, 6}));
  EXPECT_TRUE(torch::equal(r.h, c.h0));
  EXPECT_TRUE(torch::equal(r.c, c.c0));
}

TEST(LstmSequence, ShapesThatDisagreeAreRefusedNamingTheArgument) {
  const Case c = make_case(torch::kFloat32);
  auto error = [](auto&& f) {
    try {
      f();
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string h0 = error([&] { lstm_sequence(c.x, c.h0.narrow(0, 0, 2), c.c0, c.keep, c.w); });
  EXPECT_NE(h0.find("h0 must be [5, 6]"), std::string::npos) << h0;
  const std::string keep = error([&] { lstm_sequence(c.x, c.h0, c.c0, c.keep.narrow(0, 0, 2), c.w); });
  EXPECT_NE(keep.find("keep must be [9, 5]"), std::string::npos) << keep;
  const std::string dtype = error([&] { lstm_sequence(c.x.to(torch::kFloat64), c.h0, c.c0, c.keep, c.w); });
  EXPECT_NE(dtype.find("w_ih must be"), std::string::npos) << dtype;
  const std::string rank = error([&] { lstm_sequence(c.x[0], c.h0, c.c0, c.keep, c.w); });
  EXPECT_NE(rank.find("x must be a floating [T, B, I]"), std::string::npos) << rank;
}

}  // namespace
}  // namespace moonseed::models
