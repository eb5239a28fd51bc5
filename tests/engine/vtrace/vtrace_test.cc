// V-trace against cases worked out by hand (T = 2 or 3, one trajectory), then
// the tensor version against the vector version and a direct O(T^2) evaluation
// of the IMPALA sum on random inputs.
#include "engine/vtrace/targets/vtrace.h"

#include <cmath>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace moonseed::engine {
namespace {

struct Trajectory {
  std::vector<double> log_rhos, discounts, rewards, values;
  double bootstrap = 0;
  std::vector<double> mask;  // empty = all ones
};

torch::Tensor column(const std::vector<double>& v) {
  return torch::tensor(v, torch::kFloat64).unsqueeze(1);  // [T, 1]
}

// Runs both implementations on one trajectory and checks them against the
// hand-derived targets.
void expect_targets(const Trajectory& tr, const VTraceParams& params,
                    const std::vector<double>& want_vs, const std::vector<double>& want_pg) {
  const VTraceTargets plain = vtrace_targets(tr.log_rhos, tr.discounts, tr.rewards, tr.values,
                                             tr.bootstrap, tr.mask, params);
  VTraceInput in;
  in.log_rhos = column(tr.log_rhos);
  in.discounts = column(tr.discounts);
  in.rewards = column(tr.rewards);
  in.values = column(tr.values);
  in.bootstrap_value = torch::tensor({tr.bootstrap}, torch::kFloat64);
  if (!tr.mask.empty()) in.mask = column(tr.mask);
  const VTraceOutput tensors = vtrace(in, params);

  ASSERT_EQ(plain.vs.size(), want_vs.size());
  ASSERT_EQ(tensors.vs.sizes(), torch::IntArrayRef({static_cast<int64_t>(want_vs.size()), 1}));
  for (size_t t = 0; t < want_vs.size(); ++t) {
    EXPECT_NEAR(plain.vs[t], want_vs[t], 1e-12) << "vs at t=" << t;
    EXPECT_NEAR(plain.pg_advantages[t], want_pg[t], 1e-12) << "pg advantage at t=" << t;
    EXPECT_NEAR(tensors.vs[t][0].item<double>(), want_vs[t], 1e-12) << "tensor vs at t=" << t;
    EXPECT_NEAR(tensors.pg_advantages[t][0].item<double>(), want_pg[t], 1e-12)
        << "tensor pg advantage at t=" << t;
  }
}

TEST(VTrace, OnPolicyWithoutClippingGivesNStepReturns) {
  // rho = c = 1 everywhere, gamma = 0.9, lambda = 1: vs_t is the n-step return
  // bootstrapped from V_T = 2.
  //   vs_2 = 3 + 0.9 * 2     = 4.8
  //   vs_1 = 2 + 0.9 * 4.8   = 6.32
  //   vs_0 = 1 + 0.9 * 6.32  = 6.688
  // A_t = r_t + 0.9 vs_{t+1} - V_t:
  //   A_0 = 1 + 0.9 * 6.32 - 0.5 = 6.188
  //   A_1 = 2 + 0.9 * 4.8  - 1.0 = 5.32
  //   A_2 = 3 + 0.9 * 2    - 1.5 = 3.3
  Trajectory tr{{0, 0, 0}, {0.9, 0.9, 0.9}, {1, 2, 3}, {0.5, 1.0, 1.5}, 2.0, {}};
  expect_targets(tr, VTraceParams{}, {6.688, 6.32, 4.8}, {6.188, 5.32, 3.3});
}

TEST(VTrace, ClipsImportanceWeightsAtRhoClip) {
  // rho = (2, 0.5), rho_clip = c_clip = 1: rho_bar = (1, 0.5), c = (1, 0.5);
  // gamma = 0.5, r = (1, 1), V = (0, 0), V_T = 4.
  //   delta_1 = 0.5 * (1 + 0.5 * 4 - 0) = 1.5   -> vs_1 = 1.5
  //   delta_0 = 1   * (1 + 0.5 * 0 - 0) = 1
  //   acc_0 = 1 + 0.5 * c_0 (1) * 1.5 = 1.75    -> vs_0 = 1.75
  //   A_1 = min(1, 0.5) * (1 + 0.5 * 4 - 0)   = 1.5
  //   A_0 = min(1, 2)   * (1 + 0.5 * 1.5 - 0) = 1.75
  Trajectory tr{{std::log(2.0), std::log(0.5)}, {0.5, 0.5}, {1, 1}, {0, 0}, 4.0, {}};
  expect_targets(tr, VTraceParams{}, {1.75, 1.5}, {1.75, 1.5});
}

TEST(VTrace, ClipsTraceCoefficientsAtCClipTimesLambda) {
  // rho = (2, 2), rho_clip = 10 (no clipping): rho_bar = (2, 2);
  // c = lambda * min(c_clip, rho) = 0.5 * 1 = 0.5; gamma = 1, r = (0, 1), V = (1, 1), V_T = 3.
  //   delta_1 = 2 * (1 + 3 - 1) = 6            -> vs_1 = 1 + 6 = 7
  //   delta_0 = 2 * (0 + 1 - 1) = 0
  //   acc_0 = 0 + 1 * 0.5 * 6 = 3              -> vs_0 = 1 + 3 = 4
  //   A_1 = min(1, 2) * (1 + 3 - 1) = 3
  //   A_0 = min(1, 2) * (0 + 7 - 1) = 6
  VTraceParams params;
  params.rho_clip = 10;
  params.lambda = 0.5;
  Trajectory tr{{std::log(2.0), std::log(2.0)}, {1, 1}, {0, 1}, {1, 1}, 3.0, {}};
  expect_targets(tr, params, {4, 7}, {6, 3});
}

TEST(VTrace, TerminationCutsTheTraceAndTheBootstrap) {
  // On-policy, gamma = 0.9; step 1 ends the episode, so discount_1 = 0.
  // r = (1, 1, 1), V = (0.5, 0.5, 0.5), V_T = 10.
  //   delta_2 = 1 + 0.9 * 10  - 0.5 = 9.5  -> vs_2 = 10
  //   delta_1 = 1 + 0   * 0.5 - 0.5 = 0.5  -> acc_1 = 0.5 + 0 * acc_2 = 0.5, vs_1 = 1
  //   delta_0 = 1 + 0.9 * 0.5 - 0.5 = 0.95 -> acc_0 = 0.95 + 0.9 * 0.5 = 1.4, vs_0 = 1.9
  // so vs_0 = r_0 + 0.9 r_1 = 1.9: V_T = 10 does not reach the finished episode.
  //   A_0 = 1 + 0.9 * 1 - 0.5 = 1.4,  A_1 = 1 - 0.5 = 0.5,  A_2 = 1 + 9 - 0.5 = 9.5
  Trajectory tr{{0, 0, 0}, {0.9, 0.0, 0.9}, {1, 1, 1}, {0.5, 0.5, 0.5}, 10.0, {}};
  expect_targets(tr, VTraceParams{}, {1.9, 1.0, 10.0}, {1.4, 0.5, 9.5});
}

TEST(VTrace, MaskedFinalObservationBootstrapsTruncationWithoutLeakingTheNextEpisode) {
  // Step 0's action hits the time limit (truncated, not terminated): x_1 is the final
  // observation, an invalid step (mask 0, discount 0) whose reward 100 is garbage.
  // Step 2 is the next episode. gamma = 0.9, r = (2, 100, 5), V = (1, 4, 3), V_T = 2.
  //   delta_2 = 5 + 0.9 * 2 - 3 = 3.8          -> vs_2 = 6.8
  //   delta_1 = 0 (mask)  -> acc_1 = 0 + 0 * 3.8 = 0, vs_1 = V_1 = 4
  //   delta_0 = 2 + 0.9 * V_1 (4) - 1 = 4.6    -> acc_0 = 4.6 + 0.9 * 0 = 4.6, vs_0 = 5.6
  // vs_0 = r_0 + gamma V(final obs): the truncation bootstraps from the final observation.
  //   A_0 = 2 + 0.9 * 4 - 1 = 4.6,  A_1 = 0 (masked),  A_2 = 5 + 0.9 * 2 - 3 = 3.8
  Trajectory tr{{0, 0, 0}, {0.9, 0.0, 0.9}, {2, 100, 5}, {1, 4, 3}, 2.0, {1, 0, 1}};
  expect_targets(tr, VTraceParams{}, {5.6, 4.0, 6.8}, {4.6, 0.0, 3.8});
}

TEST(VTrace, ClipsThePolicyGradientWeightAtPgRhoClip) {
  // rho = (3, 0.25), rho_clip = c_clip = 5 (no clipping there), pg_rho_clip = 2;
  // gamma = 1, r = (1, 2), V = (0, 0), V_T = 1.
  //   delta_1 = 0.25 * (2 + 1 - 0) = 0.75     -> vs_1 = 0.75
  //   delta_0 = 3 * (1 + 0 - 0) = 3
  //   acc_0 = 3 + 1 * 3 * 0.75 = 5.25         -> vs_0 = 5.25
  //   A_0 = min(2, 3)    * (1 + 0.75 - 0) = 3.5
  //   A_1 = min(2, 0.25) * (2 + 1 - 0)    = 0.75
  VTraceParams params;
  params.rho_clip = 5;
  params.c_clip = 5;
  params.pg_rho_clip = 2;
  Trajectory tr{{std::log(3.0), std::log(0.25)}, {1, 1}, {1, 2}, {0, 0}, 1.0, {}};
  expect_targets(tr, params, {5.25, 0.75}, {3.5, 0.75});
}

// vs_s = V_s + sum_{t>=s} (prod_{s<=i<t} gamma_i c_i) delta_t, evaluated directly.
VTraceTargets naive_reference(const Trajectory& tr, const VTraceParams& p) {
  const size_t T = tr.values.size();
  auto v_next = [&](size_t t) { return t + 1 < T ? tr.values[t + 1] : tr.bootstrap; };
  VTraceTargets out;
  for (size_t s = 0; s < T; ++s) {
    double sum = 0;
    for (size_t t = s; t < T; ++t) {
      double weight = 1;
      for (size_t i = s; i < t; ++i) {
        weight *= tr.discounts[i] * p.lambda * std::min(p.c_clip, std::exp(tr.log_rhos[i]));
      }
      const double rho_bar = std::min(p.rho_clip, std::exp(tr.log_rhos[t]));
      sum += weight * tr.mask[t] * rho_bar *
             (tr.rewards[t] + tr.discounts[t] * v_next(t) - tr.values[t]);
    }
    out.vs.push_back(tr.values[s] + sum);
  }
  for (size_t s = 0; s < T; ++s) {
    const double vs_next = s + 1 < T ? out.vs[s + 1] : tr.bootstrap;
    out.pg_advantages.push_back(tr.mask[s] * std::min(p.pg_rho_clip, std::exp(tr.log_rhos[s])) *
                                (tr.rewards[s] + tr.discounts[s] * vs_next - tr.values[s]));
  }
  return out;
}

TEST(VTrace, TensorVersionMatchesPerColumnTargetsAndTheDirectSumOnRandomInputs) {
  const int64_t T = 9, B = 6;
  std::mt19937 gen(7);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::normal_distribution<double> normal(0.0, 1.0);
  VTraceParams params;
  params.lambda = 0.9;
  params.rho_clip = 1.3;
  params.c_clip = 0.8;
  params.pg_rho_clip = 1.1;

  std::vector<Trajectory> columns(B);
  for (auto& tr : columns) {
    for (int64_t t = 0; t < T; ++t) {
      tr.log_rhos.push_back(normal(gen) * 0.7);
      tr.mask.push_back(unit(gen) < 0.2 ? 0.0 : 1.0);
      const double terminated = unit(gen) < 0.15 ? 1.0 : 0.0;
      tr.discounts.push_back(0.97 * (1 - terminated) * tr.mask.back());
      tr.rewards.push_back(normal(gen));
      tr.values.push_back(normal(gen));
    }
    tr.bootstrap = normal(gen);
  }
  auto stack = [&](std::vector<double> Trajectory::*field) {
    torch::Tensor t = torch::empty({T, B}, torch::kFloat64);
    for (int64_t b = 0; b < B; ++b) {
      for (int64_t i = 0; i < T; ++i) t[i][b] = (columns[b].*field)[i];
    }
    return t;
  };
  VTraceInput in;
  in.log_rhos = stack(&Trajectory::log_rhos);
  in.discounts = stack(&Trajectory::discounts);
  in.rewards = stack(&Trajectory::rewards);
  in.values = stack(&Trajectory::values);
  in.mask = stack(&Trajectory::mask);
  in.bootstrap_value = torch::empty({B}, torch::kFloat64);
  for (int64_t b = 0; b < B; ++b) in.bootstrap_value[b] = columns[b].bootstrap;
  const VTraceOutput out = vtrace(in, params);

  for (int64_t b = 0; b < B; ++b) {
    const Trajectory& tr = columns[b];
    const VTraceTargets plain = vtrace_targets(tr.log_rhos, tr.discounts, tr.rewards, tr.values,
                                               tr.bootstrap, tr.mask, params);
    const VTraceTargets direct = naive_reference(tr, params);
    for (int64_t t = 0; t < T; ++t) {
      EXPECT_NEAR(out.vs[t][b].item<double>(), plain.vs[t], 1e-10) << "t=" << t << " b=" << b;
      EXPECT_NEAR(out.vs[t][b].item<double>(), direct.vs[t], 1e-10) << "t=" << t << " b=" << b;
      EXPECT_NEAR(out.pg_advantages[t][b].item<double>(), plain.pg_advantages[t], 1e-10)
          << "t=" << t << " b=" << b;
      EXPECT_NEAR(out.pg_advantages[t][b].item<double>(), direct.pg_advantages[t], 1e-10)
          << "t=" << t << " b=" << b;
    }
  }
}

TEST(VTrace, TargetsCarryNoGradient) {
  VTraceInput in;
  in.log_rhos = torch::zeros({3, 2}, torch::requires_grad());
  in.discounts = torch::full({3, 2}, 0.9);
  in.rewards = torch::ones({3, 2});
  in.values = torch::zeros({3, 2}, torch::requires_grad());
  in.bootstrap_value = torch::zeros({2}, torch::requires_grad());
  const VTraceOutput out = vtrace(in, VTraceParams{});
  EXPECT_FALSE(out.vs.requires_grad());
  EXPECT_FALSE(out.pg_advantages.requires_grad());
}

// Expects `f` to throw std::invalid_argument whose message contains `needle`.
template <typename F>
void expect_invalid_argument_naming(F f, const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << "no exception; expected one naming " << needle;
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

VTraceInput well_formed(int64_t T, int64_t B) {
  VTraceInput in;
  in.log_rhos = torch::zeros({T, B});
  in.discounts = torch::full({T, B}, 0.9);
  in.rewards = torch::zeros({T, B});
  in.values = torch::zeros({T, B});
  in.bootstrap_value = torch::zeros({B});
  return in;
}

TEST(VTrace, RejectsTensorsOfTheWrongShapeNamingThem) {
  {
    VTraceInput in = well_formed(4, 3);
    in.values = torch::zeros({4, 2});
    expect_invalid_argument_naming([&] { vtrace(in, VTraceParams{}); }, "values");
  }
  {
    VTraceInput in = well_formed(4, 3);
    in.bootstrap_value = torch::zeros({3, 1});
    expect_invalid_argument_naming([&] { vtrace(in, VTraceParams{}); }, "bootstrap_value");
  }
  {
    VTraceInput in = well_formed(4, 3);
    in.mask = torch::ones({5, 3});
    expect_invalid_argument_naming([&] { vtrace(in, VTraceParams{}); }, "mask");
  }
  {
    VTraceInput in = well_formed(4, 3);
    in.log_rhos = torch::zeros({12});
    expect_invalid_argument_naming([&] { vtrace(in, VTraceParams{}); }, "log_rhos");
  }
  {
    VTraceInput in = well_formed(4, 3);
    in.discounts = torch::Tensor();
    expect_invalid_argument_naming([&] { vtrace(in, VTraceParams{}); }, "discounts");
  }
}

TEST(VTrace, VectorVersionRejectsMismatchedLengthsNamingThem) {
  expect_invalid_argument_naming(
      [] { vtrace_targets({0, 0}, {1, 1}, {0}, {0, 0}, 0.0, {}, VTraceParams{}); }, "rewards");
  expect_invalid_argument_naming(
      [] { vtrace_targets({0, 0}, {1, 1}, {0, 0}, {0, 0}, 0.0, {1}, VTraceParams{}); }, "mask");
}

}  // namespace
}  // namespace moonseed::engine
