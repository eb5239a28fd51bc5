#include "engine/actor_critic/unroll_outputs.h"

#include <stdexcept>
#include <string>

#include <gtest/gtest.h>

namespace moonseed::engine {
namespace {

UnrollBatch recurrent_batch(int64_t T, int64_t B, int64_t H) {
  UnrollBatch batch;
  batch.observations = torch::randn({T + 1, B, 3});
  batch.actions = torch::randint(0, 2, {T + 1, B});
  batch.behaviour_logp = torch::randn({T + 1, B});
  batch.rewards = torch::randn({T + 1, B});
  batch.terminated = torch::zeros({T + 1, B});
  batch.truncated = torch::zeros({T + 1, B});
  batch.valid = torch::ones({T + 1, B});
  batch.valid[1][2] = 0;
  batch.policy_version = torch::arange(B).repeat({T + 1, 1});
  batch.start_h = torch::randn({B, H});
  batch.start_c = torch::randn({B, H});
  batch.start_prev_action = torch::randint(0, 2, {B});
  batch.start_prev_reward = torch::randn({B});
  batch.frames = batch.valid.narrow(0, 0, T).sum().item<int64_t>();
  return batch;
}

TEST(SelectUnrolls, TakesTheColumnsAndStartStatesOfTheUnrollsInTheirOrderAndCountsTheirFrames) {
  torch::manual_seed(2);
  const UnrollBatch batch = recurrent_batch(4, 5, 6);
  const torch::Tensor index = torch::tensor({2, 0}, torch::kInt64);
  const UnrollBatch part = select_unrolls(batch, index);
  EXPECT_EQ(part.T(), 4);
  EXPECT_EQ(part.B(), 2);
  EXPECT_TRUE(torch::equal(part.observations.select(1, 0), batch.observations.select(1, 2)));
  EXPECT_TRUE(torch::equal(part.actions.select(1, 1), batch.actions.select(1, 0)));
  EXPECT_TRUE(torch::equal(part.behaviour_logp.select(1, 0), batch.behaviour_logp.select(1, 2)));
  EXPECT_TRUE(torch::equal(part.policy_version.select(1, 0), batch.policy_version.select(1, 2)));
  EXPECT_TRUE(torch::equal(part.start_h[0], batch.start_h[2]));
  EXPECT_TRUE(torch::equal(part.start_c[1], batch.start_c[0]));
  EXPECT_EQ(part.start_prev_action[0].item<int64_t>(), batch.start_prev_action[2].item<int64_t>());
  EXPECT_EQ(part.start_prev_reward[1].item<float>(), batch.start_prev_reward[0].item<float>());
  EXPECT_EQ(part.frames, 4 + 3) << "unroll 2 has one final observation";
}

TEST(SelectUnrolls, AFeedForwardBatchKeepsItsStartStatesUndefined) {
  UnrollBatch batch = recurrent_batch(2, 3, 4);
  batch.start_h = batch.start_c = batch.start_prev_action = batch.start_prev_reward = torch::Tensor();
  const UnrollBatch part = select_unrolls(batch, torch::tensor({1}, torch::kInt64));
  EXPECT_FALSE(part.start_h.defined());
  EXPECT_EQ(part.B(), 1);
}

TEST(UnrollOutputs, NamesTheCallerAndTheFieldWhoseShapeIsWrong) {
  models::ModelSpec model;
  envs::EnvSpec spec;
  spec.id = "Test-v0";
  spec.observation.kind = envs::SpaceKind::kBox;
  spec.observation.shape = {3};
  spec.action.kind = envs::SpaceKind::kDiscrete;
  spec.action.n = 2;
  models::PolicyNet net(model, spec);
  UnrollBatch batch = recurrent_batch(3, 3, 4);
  const UnrollOutputs out = unroll_outputs(net, batch, "who");
  EXPECT_EQ(out.logpi.sizes(), (std::vector<int64_t>{3, 3}));
  EXPECT_EQ(out.values.sizes(), (std::vector<int64_t>{4, 3}));
  EXPECT_EQ(out.valid.sum().item<float>(), 8.f);
  batch.rewards = torch::zeros({3, 3});
  try {
    unroll_outputs(net, batch, "appo_loss");
    FAIL() << "a short rewards tensor was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("appo_loss: batch.rewards must start with [T+1, B] = [4, 3]"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace moonseed::engine
