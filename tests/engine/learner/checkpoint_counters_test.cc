// The counters a checkpoint keeps for a resume, from old files too.

#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "engine/learner/checkpoint.h"
#include "tests/engine/learner/checkpoint_fixtures.h"
#include "engine/learner/optimizer.h"
#include "models/policy_net.h"

namespace moonseed::engine {
namespace {


using testing::small_net;
using testing::spec;

// A TempDir named after this file.
struct TempDir : testing::TempDir {
  TempDir() : testing::TempDir("moonseed-ckpt-counters") {}
};

TEST(CheckpointCounters, TrainedFramesAndEvalEpisodesSurviveARoundTrip) {
  TempDir tmp;
  models::PolicyNet net = small_net();
  auto opt = make_optimizer(OptimizerConfig{}, net->parameters());
  Counters counters;
  counters.optimizer_steps = 7;
  counters.trained_frames = 4096;
  counters.eval_episodes = 33;
  save_checkpoint(tmp.path("ckpt-7.pt"), *net, *opt, counters);
  const Counters got = load_checkpoint(tmp.path("ckpt-7.pt"), *net, *opt);
  EXPECT_EQ(got.optimizer_steps, 7);
  EXPECT_EQ(got.trained_frames, 4096);
  EXPECT_EQ(got.eval_episodes, 33);
}

// The keys and layout of a checkpoint from before trained_frames and
// eval_episodes were kept: it still loads, with those counters at 0.
TEST(CheckpointCounters, ACheckpointFromBeforeTheyWereKeptLoadsThemAsZero) {
  TempDir tmp;
  models::PolicyNet net = small_net();
  auto opt = make_optimizer(OptimizerConfig{}, net->parameters());
  torch::serialize::OutputArchive archive;
  archive.write("moonseed_checkpoint_format", c10::IValue(int64_t{1}));
  archive.write("optimizer_kind", c10::IValue(optimizer_kind(*opt)));
  archive.write("optimizer_steps", c10::IValue(int64_t{12}));
  archive.write("frames", c10::IValue(int64_t{3000}));
  archive.write("episodes", c10::IValue(int64_t{40}));
  archive.write("elapsed_s", c10::IValue(2.5));
  torch::serialize::OutputArchive model_archive(archive.compilation_unit());
  net->save(model_archive);
  archive.write("model", model_archive);
  torch::serialize::OutputArchive optimizer_archive(archive.compilation_unit());
  opt->save(optimizer_archive);
  archive.write("optimizer", optimizer_archive);
  write_archive_atomically(archive, tmp.path("ckpt-12.pt"), "checkpoint");

  const Counters got = load_checkpoint(tmp.path("ckpt-12.pt"), *net, *opt);
  EXPECT_EQ(got.optimizer_steps, 12);
  EXPECT_EQ(got.frames, 3000);
  EXPECT_EQ(got.episodes, 40);
  EXPECT_EQ(got.elapsed_s, 2.5);
  EXPECT_EQ(got.trained_frames, 0);
  EXPECT_EQ(got.eval_episodes, 0);
}

TEST(CheckpointCounters, ARankPartHoldsItsRanksCountersAndNoOtherRankTakesIt) {
  TempDir tmp;
  Counters counters;
  counters.optimizer_steps = 40;
  counters.frames = 12345;
  counters.episodes = 67;
  counters.trained_frames = 8192;
  counters.eval_episodes = 5;
  counters.train_s = 3.25;
  save_rank_counters(tmp.path("rank-40.part"), counters, 1);
  const Counters got = load_rank_counters(tmp.path("rank-40.part"), 1);
  EXPECT_EQ(got.optimizer_steps, 40);
  EXPECT_EQ(got.frames, 12345);
  EXPECT_EQ(got.episodes, 67);
  EXPECT_EQ(got.trained_frames, 8192);
  EXPECT_EQ(got.eval_episodes, 5);
  EXPECT_DOUBLE_EQ(got.train_s, 3.25);
  try {
    load_rank_counters(tmp.path("rank-40.part"), 2);
    ADD_FAILURE() << "rank 2 took rank 1's part";
  } catch (const CheckpointError& e) {
    EXPECT_NE(std::string(e.what()).find("rank 1's, not rank 2's"), std::string::npos) << e.what();
  }
  // A model checkpoint is not a rank part, and a missing file is named.
  models::PolicyNet net = small_net();
  auto opt = make_optimizer(OptimizerConfig{}, net->parameters());
  save_checkpoint(tmp.path("ckpt-40.pt"), *net, *opt, counters);
  EXPECT_THROW(load_rank_counters(tmp.path("ckpt-40.pt"), 1), CheckpointError);
  EXPECT_THROW(load_rank_counters(tmp.path("rank-41.part"), 1), CheckpointError);
}

}  // namespace
}  // namespace moonseed::engine
