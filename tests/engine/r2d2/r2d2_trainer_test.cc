#include "engine/r2d2/r2d2_trainer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>
#include "tests/error_text.h"

namespace moonseed::engine {
namespace {

using test::error_text;

envs::EnvSpec spec_of(int64_t obs_size, int64_t actions) {
  envs::EnvSpec spec;
  spec.id = "Test-v0";
  spec.observation.kind = envs::SpaceKind::kBox;
  spec.observation.dtype = envs::DType::kFloat32;
  spec.observation.shape = {obs_size};
  spec.action.kind = envs::SpaceKind::kDiscrete;
  spec.action.n = actions;
  return spec;
}

models::QNetSpec net_spec(int64_t lstm) {
  models::QNetSpec spec;
  spec.torso = {models::LayerSpec{"linear", 16}, models::LayerSpec{"relu"}};
  spec.lstm = lstm;
  spec.head_hidden = 16;
  return spec;
}

// A batch of B sequences of L steps: random observations, every step valid,
// no episode boundaries; the caller edits columns as a test needs.
SequenceBatch batch_of(int64_t L, int64_t B, int64_t obs_size, int64_t actions, int64_t lstm) {
  SequenceBatch b;
  b.steps["obs"] = torch::randn({L, B, obs_size});
  b.steps["action"] = torch::randint(0, actions, {L, B}, torch::kInt64);
  b.steps["reward"] = torch::rand({L, B});
  b.steps["terminated"] = torch::zeros({L, B}, torch::kUInt8);
  b.steps["truncated"] = torch::zeros({L, B}, torch::kUInt8);
  b.steps["valid"] = torch::ones({L, B}, torch::kUInt8);
  b.steps["reset"] = torch::zeros({L, B}, torch::kUInt8);
  b.steps["prev_action"] = torch::randint(0, actions, {L, B}, torch::kInt64);
  b.steps["prev_reward"] = torch::rand({L, B});
  if (lstm > 0) {
    b.starts["h"] = torch::randn({B, lstm});
    b.starts["c"] = torch::randn({B, lstm});
  }
  return b;
}

SampledBatch sampled(SequenceBatch batch) {
  SampledBatch s;
  const int64_t B = batch.steps.at("obs").size(1);
  s.batch = std::move(batch);
  s.weights.assign(static_cast<size_t>(B), 1.0);
  return s;
}

struct Rig {
  Rig(const R2d2TrainerConfig& config, int64_t lstm, int64_t obs_size = 3, int64_t actions = 2, double lr = 1e-3) {
    torch::manual_seed(7);
    models::QNet net(net_spec(lstm), spec_of(obs_size, actions));
    optimizer = std::make_unique<torch::optim::Adam>(net->parameters(), torch::optim::AdamOptions(lr));
    trainer = std::make_unique<R2d2Trainer>(config, net, *optimizer, torch::kCPU);
  }
  std::unique_ptr<torch::optim::Adam> optimizer;
  std::unique_ptr<R2d2Trainer> trainer;
};

R2d2TrainerConfig small_config(int64_t burn_in, int64_t trace) {
  R2d2TrainerConfig c;
  c.burn_in = burn_in;
  c.trace = trace;
  c.n_step.n = 2;
  c.n_step.gamma = 0.9;
  return c;
}

bool same_parameters(models::QNet& a, models::QNet& b) {
  auto pa = a->named_parameters();
  auto pb = b->named_parameters();
  for (const auto& p : pa) {
    if (!torch::equal(p.value(), pb[p.key()])) return false;
  }
  return true;
}

TEST(R2d2Trainer, ConfigErrorsNameTheField) {
  R2d2TrainerConfig c;
  c.trace = 1;
  EXPECT_EQ(error_text([&] { validate(c); }),
            "R2d2TrainerConfig: trace must be >= 2 (the last step only bootstraps), got 1");
  c = R2d2TrainerConfig{};
  c.target_period = 0;
  EXPECT_EQ(error_text([&] { validate(c); }), "R2d2TrainerConfig: target_period must be >= 1, got 0");
  c = R2d2TrainerConfig{};
  c.eta = 1.5;
  EXPECT_EQ(error_text([&] { validate(c); }), "R2d2TrainerConfig: eta must be in [0, 1], got 1.5");
  EXPECT_NO_THROW(validate(R2d2TrainerConfig{}));
}

TEST(R2d2Trainer, ColumnsFollowTheEnvsObservation) {
  envs::EnvSpec spec = spec_of(4, 2);
  spec.observation.dtype = envs::DType::kUInt8;
  spec.observation.shape = {4, 84, 84};
  const std::vector<ColumnSpec> steps = r2d2_step_columns(spec);
  ASSERT_EQ(steps.size(), 9u);
  EXPECT_EQ(steps[0].describe(), ColumnSpec({"obs", torch::kUInt8, {4, 84, 84}}).describe());
  EXPECT_EQ(steps[1].name, "action");
  EXPECT_EQ(steps[1].dtype, torch::kInt64);
  EXPECT_EQ(r2d2_start_columns(512).size(), 2u);
  EXPECT_EQ(r2d2_start_columns(512)[1].shape, (std::vector<int64_t>{512}));
  EXPECT_TRUE(r2d2_start_columns(0).empty());
}

// A contextual bandit: every step ends its episode, action 0 pays 1 and action 1
// pays 0, so the targets are h(1) and h(0) = 0 whatever the net says.
TEST(R2d2Trainer, LearnsTheValuesOfABanditInValueRescaledSpace) {
  R2d2TrainerConfig config = small_config(0, 6);
  Rig s(config, /*lstm=*/0, 3, 2, /*lr=*/1e-2);
  double last_loss = 0;
  for (int i = 0; i < 300; ++i) {
    SequenceBatch b = batch_of(6, 16, 3, 2, 0);
    b.steps["terminated"].fill_(1);
    b.steps["reward"] = (b.steps["action"] == 0).to(torch::kFloat32);
    last_loss = s.trainer->learn(sampled(b), nullptr).loss;
    s.trainer->apply();
  }
  EXPECT_LT(last_loss, 1e-3);
  torch::NoGradGuard no_grad;
  const torch::Tensor obs = torch::randn({32, 3});
  const torch::Tensor q = s.trainer->online()->step(obs, torch::zeros({32}, torch::kInt64), torch::zeros({32}),
                                                    {}).first;
  const double h1 = value_rescale(1.0);  // sqrt(2) - 1 + 1e-3
  EXPECT_NEAR(q.select(1, 0).mean().item<double>(), h1, 0.03);
  EXPECT_NEAR(q.select(1, 1).mean().item<double>(), 0.0, 0.03);
}

// Reward 1 at every step, never an end, gamma 0.5, n = 1: y = 1 + 0.5 y, so the
// fixed point of the bootstrapped target is y = 2, reached through the target net.
TEST(R2d2Trainer, BootstrapsThroughTheTargetNetToTheFixedPoint) {
  R2d2TrainerConfig config = small_config(0, 5);
  config.n_step.n = 1;
  config.n_step.gamma = 0.5;
  config.target_period = 10;
  Rig s(config, /*lstm=*/0, 3, 2, /*lr=*/1e-2);
  R2d2StepStats stats;
  for (int i = 0; i < 600; ++i) {
    SequenceBatch b = batch_of(5, 16, 3, 2, 0);
    b.steps["reward"].fill_(1);
    stats = s.trainer->learn(sampled(b), nullptr);
    s.trainer->apply();
  }
  EXPECT_NEAR(stats.mean_q, value_rescale(2.0), 0.05);
  EXPECT_EQ(s.trainer->steps(), 600);
}

TEST(R2d2Trainer, TheTargetNetIsCopiedOnItsPeriodOnly) {
  R2d2TrainerConfig config = small_config(2, 4);
  config.target_period = 3;
  Rig s(config, /*lstm=*/4);
  EXPECT_TRUE(same_parameters(s.trainer->online(), s.trainer->target()));
  for (int step = 1; step <= 4; ++step) {
    s.trainer->learn(sampled(batch_of(6, 4, 3, 2, 4)), nullptr);
    s.trainer->apply();
    EXPECT_EQ(same_parameters(s.trainer->online(), s.trainer->target()), step == 3) << "after step " << step;
  }
}

TEST(R2d2Trainer, BurnInStepsCarryNoLossButTheirObservationsShapeTheState) {
  R2d2TrainerConfig config = small_config(3, 4);
  Rig s(config, /*lstm=*/4);
  const SequenceBatch base = batch_of(7, 5, 3, 2, 4);
  const std::vector<double> p0 = s.trainer->priorities(base);
  ASSERT_EQ(p0.size(), 5u);

  // Rewards, actions and flags of burn-in steps are never in a target or a TD error.
  SequenceBatch rewards = base;
  rewards.steps["reward"] = base.steps.at("reward").clone();
  rewards.steps["reward"].narrow(0, 0, 3).fill_(100);
  rewards.steps["action"] = base.steps.at("action").clone();
  rewards.steps["action"].narrow(0, 0, 3).fill_(1);
  EXPECT_EQ(s.trainer->priorities(rewards), p0);

  // Their observations go through the LSTM into the trace's state.
  SequenceBatch obs = base;
  obs.steps["obs"] = base.steps.at("obs").clone();
  obs.steps["obs"].narrow(0, 0, 3).add_(1);
  EXPECT_NE(s.trainer->priorities(obs), p0);
}

// Sequences from a real SequenceReplay built on r2d2_step_columns: training on
// them (burn-in included) leaves the replay's stored start states as they were.
TEST(R2d2Trainer, TrainsOnReplaySequencesAndLeavesTheirStoredStatesUntouched) {
  R2d2TrainerConfig config = small_config(2, 4);
  Rig s(config, /*lstm=*/4);
  SequenceReplayConfig rc;
  rc.capacity = 8;
  rc.sequence_length = 6;
  rc.period = 3;  // blocks of 3 steps, 2 per sequence
  const envs::EnvSpec env = spec_of(3, 2);
  SequenceReplay replay(rc, r2d2_step_columns(env), r2d2_start_columns(4));
  SequenceAssembler assembler(rc);
  std::vector<std::vector<BlockRef>> sequences;
  for (int k = 0; k < 4; ++k) {
    const SequenceBatch block = batch_of(3, 1, 3, 2, 4);
    std::map<std::string, torch::Tensor> steps;
    for (const auto& [name, t] : block.steps) steps[name] = t.select(1, 0).contiguous();
    std::map<std::string, torch::Tensor> starts;
    for (const auto& [name, t] : block.starts) starts[name] = t.select(0, 0).contiguous();
    if (auto seq = assembler.push(replay.add_block(steps, starts))) sequences.push_back(*seq);
  }
  ASSERT_EQ(sequences.size(), 3u);
  const SequenceBatch stored = replay.gather(sequences);
  const std::vector<double> priorities = s.trainer->priorities(stored);
  for (size_t i = 0; i < sequences.size(); ++i) ASSERT_TRUE(replay.insert(sequences[i], priorities[i]));

  SampledBatch b = replay.sample(3);
  std::vector<double> updated;
  s.trainer->learn(b, &updated);
  s.trainer->apply();
  replay.update_priorities(b.keys, updated);
  const SequenceBatch after = replay.gather(sequences);
  EXPECT_TRUE(torch::equal(after.starts.at("h"), stored.starts.at("h")));
  EXPECT_TRUE(torch::equal(after.starts.at("c"), stored.starts.at("c")));
  EXPECT_TRUE(torch::equal(after.steps.at("obs"), stored.steps.at("obs")));
  EXPECT_EQ(s.trainer->steps(), 1);
}

TEST(R2d2Trainer, LearnReturnsThePrioritiesOfTheNetBeforeItsStepAndWeightsScaleTheLoss) {
  R2d2TrainerConfig config = small_config(1, 5);
  Rig s(config, /*lstm=*/4);
  SampledBatch b = sampled(batch_of(6, 4, 3, 2, 4));
  const std::vector<double> expected = s.trainer->priorities(b.batch);
  std::vector<double> got;
  const double loss = s.trainer->learn(b, &got).loss;
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], expected[i], 1e-6) << i;

  // Half the importance weights: half the loss (the net has not stepped yet).
  for (double& w : b.weights) w = 0.5;
  EXPECT_NEAR(s.trainer->learn(b, nullptr).loss, 0.5 * loss, 1e-6 * (1 + loss));
}

// While the target net equals the online net (before its first copy period),
// the double-Q bootstrap Q_target(x, argmax Q_online(x)) is max_a Q_online(x, a),
// and burn-in from the stored state gives the state acting had. So priorities
// from the values an acting net gave each step equal the learner's own, across
// episode ends (terminated, truncated, a final observation) inside the trace.
TEST(R2d2Trainer, ActingPrioritiesEqualTheLearnersWhileBothNetsAreTheSame) {
  R2d2TrainerConfig config = small_config(3, 6);
  Rig s(config, /*lstm=*/4);
  const int64_t L = 9;
  const int64_t B = 5;
  SequenceBatch b = batch_of(L, B, 3, 2, 4);
  b.steps["terminated"][4][1] = 1;
  b.steps["valid"][5][1] = 0;
  b.steps["reset"][6][1] = 1;
  b.steps["truncated"][6][2] = 1;
  b.steps["valid"][7][2] = 0;
  b.steps["reset"][8][2] = 1;
  b.steps["terminated"][8][3] = 1;  // the last step: no target reaches past it
  const std::vector<double> learner = s.trainer->priorities(b);

  torch::NoGradGuard no_grad;
  models::QNetImpl::State start;
  start.h = b.starts.at("h");
  start.c = b.starts.at("c");
  const torch::Tensor q = s.trainer->online()->unroll(b.steps.at("obs"), b.steps.at("prev_action"),
                                                      b.steps.at("prev_reward"),
                                                      b.steps.at("reset").to(torch::kFloat32), start).first;
  std::vector<std::vector<ActingStep>> sequences(static_cast<size_t>(B));
  for (int64_t i = 0; i < B; ++i) {
    for (int64_t t = 0; t < L; ++t) {
      ActingStep step;
      const int64_t a = b.steps.at("action")[t][i].item<int64_t>();
      step.q_taken = q[t][i][a].item<float>();
      step.q_greedy = q[t][i].max().item<float>();
      step.reward = b.steps.at("reward")[t][i].item<float>();
      step.terminated = b.steps.at("terminated")[t][i].item<uint8_t>();
      step.truncated = b.steps.at("truncated")[t][i].item<uint8_t>();
      step.valid = b.steps.at("valid")[t][i].item<uint8_t>();
      sequences[static_cast<size_t>(i)].push_back(step);
    }
    EXPECT_TRUE(has_acting_values(sequences[static_cast<size_t>(i)]));
  }
  std::vector<const std::vector<ActingStep>*> refs;
  for (const auto& seq : sequences) refs.push_back(&seq);
  const std::vector<double> acting = s.trainer->acting_priorities(refs);
  ASSERT_EQ(acting.size(), learner.size());
  for (size_t i = 0; i < acting.size(); ++i) {
    EXPECT_GT(learner[i], 0) << i;
    EXPECT_NEAR(acting[i], learner[i], 1e-5 * (1 + learner[i])) << i;
  }

  // A step no net acted on, and a sequence of the wrong length, are told apart.
  sequences[0][2].q_taken = std::nanf("");
  EXPECT_FALSE(has_acting_values(sequences[0]));
  sequences[1].pop_back();
  EXPECT_EQ(error_text([&] { s.trainer->acting_priorities(refs); }),
            "R2d2Trainer::acting_priorities: sequence 1 has 8 steps, not burn_in + trace = 9");
}

TEST(R2d2Trainer, ANonFiniteGradientIsSkippedAndTheWeightsStayAsTheyWere) {
  Rig s(small_config(0, 4), /*lstm=*/0);
  SequenceBatch b = batch_of(4, 2, 3, 2, 0);
  b.steps["reward"][0][0] = std::nan("");
  std::map<std::string, torch::Tensor> before;
  for (const auto& p : s.trainer->online()->named_parameters()) before[p.key()] = p.value().clone();
  const R2d2StepStats stats = s.trainer->learn(sampled(b), nullptr);
  EXPECT_TRUE(stats.skipped);
  s.trainer->apply();
  EXPECT_EQ(s.trainer->steps(), 0);
  for (const auto& p : s.trainer->online()->named_parameters()) {
    EXPECT_TRUE(torch::equal(p.value(), before[p.key()])) << p.key();
  }
}

TEST(R2d2Trainer, AMissingOrWrongLengthColumnIsNamed) {
  Rig s(small_config(2, 4), /*lstm=*/4);
  SequenceBatch b = batch_of(6, 2, 3, 2, 4);
  b.steps.erase("prev_reward");
  EXPECT_EQ(error_text([&] { s.trainer->priorities(b); }), "R2d2Trainer: the batch has no step column 'prev_reward'");
  b = batch_of(5, 2, 3, 2, 4);
  EXPECT_NE(error_text([&] { s.trainer->priorities(b); }).find("step column 'obs' must be [6, B, ...]"),
            std::string::npos);
  b = batch_of(6, 2, 3, 2, 4);
  b.starts.clear();
  EXPECT_EQ(error_text([&] { s.trainer->priorities(b); }),
            "R2d2Trainer: the batch has no start column 'h' for the recurrent net");
}

}  // namespace
}  // namespace moonseed::engine
