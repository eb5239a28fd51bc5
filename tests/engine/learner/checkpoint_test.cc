#include "engine/learner/checkpoint.h"

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "engine/learner/optimizer.h"
#include "models/policy_net.h"
#include "tests/engine/learner/checkpoint_fixtures.h"

namespace moonseed::engine {
namespace {

namespace fs = std::filesystem;

// A fresh directory per test, removed afterwards.
class CheckpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "moonseed-ckpt-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  fs::path dir_;
};

using testing::spec;

models::ModelSpec model_config(std::vector<int64_t> hidden) {
  models::ModelSpec c;
  c.hidden = std::move(hidden);
  return c;
}

// A few optimizer steps on a fixed input so the optimizer has non-trivial state.
void train(models::PolicyNet& net, torch::optim::Optimizer& optimizer, int steps) {
  const torch::Tensor obs = torch::linspace(-1, 1, 20).view({5, 4});
  for (int i = 0; i < steps; ++i) {
    optimizer.zero_grad();
    const models::PolicyOutput out = net->forward(obs);
    (out.logits_or_mean.square().sum() + out.value.sum()).backward();
    optimizer.step();
  }
}

void expect_same_parameters(models::PolicyNet& a, models::PolicyNet& b) {
  const auto pa = a->named_parameters();
  const auto pb = b->named_parameters();
  ASSERT_EQ(pa.size(), pb.size());
  for (const auto& p : pa) {
    EXPECT_TRUE(torch::equal(p.value(), pb[p.key()])) << p.key();
  }
}

const torch::optim::AdamParamState& adam_state(torch::optim::Optimizer& optimizer,
                                               const torch::Tensor& param) {
  const std::string key = c10::guts::to_string(param.unsafeGetTensorImpl());
  return static_cast<const torch::optim::AdamParamState&>(*optimizer.state().at(key));
}

TEST_F(CheckpointTest, RoundTripRestoresParametersAdamMomentsAndCountersExactly) {
  torch::manual_seed(1);
  models::PolicyNet saved(model_config({8, 8}), spec());
  auto saved_opt = make_optimizer(OptimizerConfig{}, saved->parameters());
  train(saved, *saved_opt, 3);
  const Counters counters{7, 1234, 56, 78.25};
  save_checkpoint(path("ckpt.pt"), *saved, *saved_opt, counters);

  torch::manual_seed(2);  // different initial weights
  models::PolicyNet loaded(model_config({8, 8}), spec());
  auto loaded_opt = make_optimizer(OptimizerConfig{}, loaded->parameters());
  const Counters got = load_checkpoint(path("ckpt.pt"), *loaded, *loaded_opt);

  EXPECT_EQ(got.optimizer_steps, 7);
  EXPECT_EQ(got.frames, 1234);
  EXPECT_EQ(got.episodes, 56);
  EXPECT_EQ(got.elapsed_s, 78.25);
  expect_same_parameters(saved, loaded);
  const auto saved_params = saved->parameters();
  const auto loaded_params = loaded->parameters();
  for (size_t i = 0; i < saved_params.size(); ++i) {
    const auto& s = adam_state(*saved_opt, saved_params[i]);
    const auto& l = adam_state(*loaded_opt, loaded_params[i]);
    EXPECT_EQ(s.step(), l.step());
    EXPECT_TRUE(torch::equal(s.exp_avg(), l.exp_avg())) << "parameter " << i;
    EXPECT_TRUE(torch::equal(s.exp_avg_sq(), l.exp_avg_sq())) << "parameter " << i;
  }
  // The same next step on both gives the same weights: nothing was left behind.
  train(saved, *saved_opt, 1);
  train(loaded, *loaded_opt, 1);
  expect_same_parameters(saved, loaded);
}

TEST_F(CheckpointTest, RmspropStateSurvivesARoundTrip) {
  OptimizerConfig config;
  config.kind = "rmsprop";
  config.rmsprop_momentum = 0.9;
  torch::manual_seed(3);
  models::PolicyNet saved(model_config({8}), spec());
  auto saved_opt = make_optimizer(config, saved->parameters());
  train(saved, *saved_opt, 2);
  save_checkpoint(path("ckpt.pt"), *saved, *saved_opt, Counters{});

  torch::manual_seed(4);
  models::PolicyNet loaded(model_config({8}), spec());
  auto loaded_opt = make_optimizer(config, loaded->parameters());
  load_checkpoint(path("ckpt.pt"), *loaded, *loaded_opt);
  train(saved, *saved_opt, 2);
  train(loaded, *loaded_opt, 2);
  expect_same_parameters(saved, loaded);
}

TEST_F(CheckpointTest, SavingLeavesNoPartialFileAndReplacesAnOlderCheckpoint) {
  models::PolicyNet net(model_config({8}), spec());
  auto opt = make_optimizer(OptimizerConfig{}, net->parameters());
  save_checkpoint(path("ckpt.pt"), *net, *opt, Counters{1, 0, 0, 0});
  save_checkpoint(path("ckpt.pt"), *net, *opt, Counters{2, 0, 0, 0});
  EXPECT_FALSE(fs::exists(path("ckpt.pt.partial")));
  EXPECT_EQ(load_checkpoint(path("ckpt.pt"), *net, *opt).optimizer_steps, 2);
}

TEST_F(CheckpointTest, AStalePartialFileFromACrashDoesNotAffectTheCheckpoint) {
  models::PolicyNet net(model_config({8}), spec());
  auto opt = make_optimizer(OptimizerConfig{}, net->parameters());
  save_checkpoint(path("ckpt.pt"), *net, *opt, Counters{5, 0, 0, 0});
  // What a crash in the middle of the next save leaves behind.
  std::ofstream(path("ckpt.pt.partial"), std::ios::binary) << "PK\x03\x04 half a zip";
  EXPECT_EQ(load_checkpoint(path("ckpt.pt"), *net, *opt).optimizer_steps, 5);
  save_checkpoint(path("ckpt.pt"), *net, *opt, Counters{6, 0, 0, 0});
  EXPECT_FALSE(fs::exists(path("ckpt.pt.partial")));
  EXPECT_EQ(load_checkpoint(path("ckpt.pt"), *net, *opt).optimizer_steps, 6);
}

// Expects `f` to throw CheckpointError whose message contains `needle`.
template <typename F>
void expect_checkpoint_error(F f, const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << "no exception; expected one mentioning " << needle;
  } catch (const CheckpointError& e) {
    ::testing::Test::RecordProperty("error", e.what());  // visible with --gtest_output=xml
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST_F(CheckpointTest, TruncatedFileIsReportedAsCorrupt) {
  models::PolicyNet net(model_config({8}), spec());
  auto opt = make_optimizer(OptimizerConfig{}, net->parameters());
  save_checkpoint(path("ckpt.pt"), *net, *opt, Counters{});
  fs::resize_file(path("ckpt.pt"), fs::file_size(path("ckpt.pt")) / 2);
  expect_checkpoint_error([&] { load_checkpoint(path("ckpt.pt"), *net, *opt); },
                          "truncated or corrupt");
}

TEST_F(CheckpointTest, MissingFileIsReportedWithItsPath) {
  models::PolicyNet net(model_config({8}), spec());
  auto opt = make_optimizer(OptimizerConfig{}, net->parameters());
  expect_checkpoint_error([&] { load_checkpoint(path("nope.pt"), *net, *opt); },
                          "not found: " + path("nope.pt"));
}

TEST_F(CheckpointTest, ModelShapeMismatchNamesTheParameterAndLeavesTheModelUntouched) {
  models::PolicyNet small(model_config({8}), spec());
  auto small_opt = make_optimizer(OptimizerConfig{}, small->parameters());
  save_checkpoint(path("ckpt.pt"), *small, *small_opt, Counters{});

  models::PolicyNet wide(model_config({16}), spec());
  auto wide_opt = make_optimizer(OptimizerConfig{}, wide->parameters());
  const torch::Tensor before = wide->named_parameters()["value_head.weight"].clone();
  expect_checkpoint_error([&] { load_checkpoint(path("ckpt.pt"), *wide, *wide_opt); },
                          "policy_torso.0.weight");
  EXPECT_TRUE(torch::equal(wide->named_parameters()["value_head.weight"], before));
}

TEST_F(CheckpointTest, ModulesInTheFileThatTheModelLacksAreAMismatch) {
  models::PolicyNet deep(model_config({8, 8}), spec());
  auto deep_opt = make_optimizer(OptimizerConfig{}, deep->parameters());
  save_checkpoint(path("ckpt.pt"), *deep, *deep_opt, Counters{});
  // Same layers and shapes, but one torso shared by both heads: the file's
  // value_torso has no place in this model.
  models::ModelSpec shared = model_config({8, 8});
  shared.shared_torso = true;
  models::PolicyNet net(shared, spec());
  auto opt = make_optimizer(OptimizerConfig{}, net->parameters());
  expect_checkpoint_error([&] { load_checkpoint(path("ckpt.pt"), *net, *opt); }, "value_torso");
}

TEST_F(CheckpointTest, OptimizerKindMismatchIsReported) {
  models::PolicyNet net(model_config({8}), spec());
  auto adam = make_optimizer(OptimizerConfig{}, net->parameters());
  save_checkpoint(path("ckpt.pt"), *net, *adam, Counters{});
  OptimizerConfig config;
  config.kind = "rmsprop";
  auto rmsprop = make_optimizer(config, net->parameters());
  expect_checkpoint_error([&] { load_checkpoint(path("ckpt.pt"), *net, *rmsprop); },
                          "adam optimizer state");
}

TEST_F(CheckpointTest, AFileThatIsNotACheckpointIsRejected) {
  models::PolicyNet net(model_config({8}), spec());
  auto opt = make_optimizer(OptimizerConfig{}, net->parameters());
  std::ofstream(path("junk.pt"), std::ios::binary) << "not a zip archive at all";
  expect_checkpoint_error([&] { load_checkpoint(path("junk.pt"), *net, *opt); }, "junk.pt");
}

}  // namespace
}  // namespace moonseed::engine
