#include "engine/r2d2/sequence_recorder.h"

#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <optional>
#include <vector>

#include "engine/r2d2/r2d2_trainer.h"
#include "rpc/messages.h"
#include "tests/error_text.h"

namespace moonseed::engine {
namespace {

using test::error_text;

constexpr int64_t kLstm = 2;

envs::EnvSpec env_spec() {
  envs::EnvSpec spec;
  spec.id = "Test-v0";
  spec.observation.kind = envs::SpaceKind::kBox;
  spec.observation.dtype = envs::DType::kFloat32;
  spec.observation.shape = {1};
  spec.action.kind = envs::SpaceKind::kDiscrete;
  spec.action.n = 3;
  return spec;
}

// Sequences of 4 steps starting every 2: blocks of 2 steps, 2 per sequence.
struct Rig {
  explicit Rig(int slots = 2, int64_t max_streams = 4) {
    SequenceReplayConfig c;
    c.capacity = 16;
    c.sequence_length = 4;
    c.period = 2;
    c.max_streams = max_streams;
    replay = std::make_unique<SequenceReplay>(c, r2d2_step_columns(env_spec()), r2d2_start_columns(kLstm));
    recorder = std::make_unique<SequenceRecorder>(slots, env_spec(), kLstm, *replay);
  }
  // Observes x = `x` in `slot`, then acts 10 + x with state h = {x, x}, c = {-x, -x},
  // and Q-values q_taken = 100 + x, q_greedy = 200 + x.
  void step(int slot, float x, float reward, uint8_t flags = 0) {
    recorder->observe(slot, reinterpret_cast<const uint8_t*>(&x), reward, flags);
    const float h[kLstm] = {x, x};
    const float c[kLstm] = {-x, -x};
    recorder->act(slot, 10 + static_cast<int64_t>(x), h, c, 100 + x, 200 + x);
  }
  std::vector<RecordedSequence> recorded() {
    std::vector<RecordedSequence> out;
    recorder->take_sequences(out);
    return out;
  }
  std::vector<std::vector<BlockRef>> sequences() {
    std::vector<std::vector<BlockRef>> out;
    for (RecordedSequence& seq : recorded()) out.push_back(std::move(seq.blocks));
    return out;
  }
  std::unique_ptr<SequenceReplay> replay;
  std::unique_ptr<SequenceRecorder> recorder;
};

std::vector<double> values(const torch::Tensor& t) {
  const torch::Tensor d = t.to(torch::kFloat64).contiguous().flatten();
  return std::vector<double>(d.data_ptr<double>(), d.data_ptr<double>() + d.numel());
}

TEST(SequenceRecorder, StepsBecomeOverlappingSequencesWithTheirPreviousActionRewardAndStartState) {
  Rig rig;
  // x_t = t; a_t = 10 + t; r_t = 0.5 t arrives with x_{t+1}.
  rig.step(0, 0, 0, envs::kFirst);
  for (int t = 1; t <= 4; ++t) rig.step(0, static_cast<float>(t), 0.5f * (t - 1));
  std::vector<std::vector<BlockRef>> first = rig.sequences();
  ASSERT_EQ(first.size(), 1u);  // steps 0..3 complete once x_4 arrived
  for (int t = 5; t <= 6; ++t) rig.step(0, static_cast<float>(t), 0.5f * (t - 1));
  std::vector<std::vector<BlockRef>> second = rig.sequences();
  ASSERT_EQ(second.size(), 1u);  // steps 2..5

  const SequenceBatch b = rig.replay->gather({first[0], second[0]});
  EXPECT_EQ(values(b.steps.at("obs").select(1, 0)), (std::vector<double>{0, 1, 2, 3}));
  EXPECT_EQ(values(b.steps.at("obs").select(1, 1)), (std::vector<double>{2, 3, 4, 5}));
  EXPECT_EQ(values(b.steps.at("action").select(1, 0)), (std::vector<double>{10, 11, 12, 13}));
  EXPECT_EQ(values(b.steps.at("reward").select(1, 0)), (std::vector<double>{0, 0.5, 1, 1.5}));
  EXPECT_EQ(values(b.steps.at("prev_action").select(1, 0)), (std::vector<double>{-1, 10, 11, 12}));
  EXPECT_EQ(values(b.steps.at("prev_reward").select(1, 0)), (std::vector<double>{0, 0, 0.5, 1}));
  EXPECT_EQ(values(b.steps.at("reset").select(1, 0)), (std::vector<double>{1, 0, 0, 0}));
  EXPECT_EQ(values(b.steps.at("reset").select(1, 1)), (std::vector<double>{0, 0, 0, 0}));
  EXPECT_EQ(values(b.steps.at("valid")), std::vector<double>(8, 1));
  EXPECT_EQ(values(b.steps.at("terminated")), std::vector<double>(8, 0));
  // A sequence starts with the state its first step was acted on with.
  EXPECT_EQ(values(b.starts.at("h")), (std::vector<double>{0, 0, 2, 2}));
  EXPECT_EQ(values(b.starts.at("c")), (std::vector<double>{0, 0, -2, -2}));
  EXPECT_EQ(rig.recorder->stats().blocks, 3);
}

TEST(SequenceRecorder, AnEpisodeEndIsMarkedOnItsLastActionAndTheFinalObservationIsInvalid) {
  for (const uint8_t end : {envs::kTerminated, envs::kTruncated}) {
    Rig rig;
    rig.step(0, 0, 0, envs::kFirst);
    rig.step(0, 1, 1);
    rig.step(0, 2, 2, end);   // a_1 ended the episode with reward 2; x_2 is final
    rig.step(0, 3, 0, envs::kFirst);
    rig.step(0, 4, 7);
    const std::vector<std::vector<BlockRef>> seqs = rig.sequences();
    ASSERT_EQ(seqs.size(), 1u);
    const SequenceBatch b = rig.replay->gather(seqs);
    const bool terminated = end == envs::kTerminated;
    EXPECT_EQ(values(b.steps.at("reward")), (std::vector<double>{1, 2, 0, 7}));
    EXPECT_EQ(values(b.steps.at("terminated")), (std::vector<double>{0, terminated ? 1.0 : 0.0, 0, 0}));
    EXPECT_EQ(values(b.steps.at("truncated")), (std::vector<double>{0, terminated ? 0.0 : 1.0, 0, 0}));
    EXPECT_EQ(values(b.steps.at("valid")), (std::vector<double>{1, 1, 0, 1}));
    EXPECT_EQ(values(b.steps.at("reset")), (std::vector<double>{1, 0, 0, 1}));
    EXPECT_EQ(values(b.steps.at("prev_action")), (std::vector<double>{-1, 10, 11, -1}));

    std::vector<EpisodeResult> episodes;
    rig.recorder->take_finished_episodes(episodes);
    ASSERT_EQ(episodes.size(), 1u);
    EXPECT_EQ(episodes[0].episode_return, 3);
    EXPECT_EQ(episodes[0].length, 2);
    EXPECT_EQ(episodes[0].truncated, !terminated);
  }
}

// With reward shaping the recorder trains on the shaped reward and sums the env's own beside it:
// each finished episode carries both returns (the learner reports both, engine/learner/episode_returns.h).
TEST(SequenceRecorder, AnEpisodeCarriesTheEnvsOwnReturnBesideTheShapedOne) {
  Rig rig;
  const float x = 0;
  auto step = [&](float shaped, std::optional<float> env, uint8_t flags) {
    rig.recorder->observe(0, reinterpret_cast<const uint8_t*>(&x), shaped, flags, env);
    const float h[kLstm] = {0, 0};
    rig.recorder->act(0, 0, h, h, 0, 0);
  };
  step(0, 0.f, envs::kFirst);
  step(11, 1.f, 0);
  step(12, 2.f, envs::kTerminated);
  step(0, 0.f, envs::kFirst);
  step(15, 5.f, 0);
  rig.recorder->reset_slot(0);  // its actor went away: the partial episode is forgotten
  step(0, 0.f, envs::kFirst);
  step(4, std::nullopt, envs::kTruncated);  // no env reward sent: the reward is the env's
  std::vector<EpisodeResult> episodes;
  rig.recorder->take_finished_episodes(episodes);
  ASSERT_EQ(episodes.size(), 2u);
  EXPECT_EQ(episodes[0].episode_return, 23);
  EXPECT_EQ(episodes[0].env_return, 3);
  EXPECT_EQ(episodes[1].episode_return, 4);
  EXPECT_EQ(episodes[1].env_return, 4);
}

TEST(SequenceRecorder, AnUnrecordedSlotFeedsNoSequencesButReportsItsEpisodesAndWhatTheNetIsFed) {
  Rig rig;
  rig.recorder->set_recorded(1, false);
  for (int slot : {0, 1}) rig.step(slot, 0, 0, envs::kFirst);
  for (int t = 1; t <= 5; ++t) {
    for (int slot : {0, 1}) rig.step(slot, static_cast<float>(t), 1, t == 5 ? envs::kTerminated : 0);
  }
  EXPECT_EQ(rig.recorder->prev_action(1), 14);  // a_4 = 10 + 4, fed at x_5
  EXPECT_EQ(rig.recorder->prev_reward(1), 1);
  // Slot 0 alone made a sequence: steps 0..3 (step 5 waits for an observation
  // that never comes); slot 1 would have made one too.
  const std::vector<std::vector<BlockRef>> seqs = rig.sequences();
  ASSERT_EQ(seqs.size(), 1u);
  EXPECT_EQ(values(rig.replay->gather({seqs[0]}).steps.at("obs")), (std::vector<double>{0, 1, 2, 3}));
  std::vector<EpisodeResult> episodes;
  rig.recorder->take_finished_episodes(episodes);
  ASSERT_EQ(episodes.size(), 2u);
  for (const EpisodeResult& e : episodes) {
    EXPECT_EQ(e.episode_return, 5);
    EXPECT_EQ(e.length, 5);
  }
  EXPECT_EQ(episodes[0].slot + episodes[1].slot, 1);  // one from each slot
}

TEST(SequenceRecorder, ARestartMidEpisodeDropsThePartialSequenceSoNoneStraddlesTheCut) {
  Rig rig;
  rig.step(0, 0, 0, envs::kFirst);
  rig.step(0, 1, 0);
  rig.step(0, 2, 0);  // steps 0, 1 complete: one block added
  rig.step(0, 100, 0, envs::kFirst);  // the actor reconnected: no final observation
  for (int t = 101; t <= 104; ++t) rig.step(0, static_cast<float>(t), 0);
  const std::vector<std::vector<BlockRef>> seqs = rig.sequences();
  ASSERT_EQ(seqs.size(), 1u);
  const SequenceBatch b = rig.replay->gather(seqs);
  EXPECT_EQ(values(b.steps.at("obs")), (std::vector<double>{100, 101, 102, 103}));
  EXPECT_EQ(rig.recorder->stats().interrupted_episodes, 1);
  std::vector<EpisodeResult> episodes;
  rig.recorder->take_finished_episodes(episodes);
  EXPECT_TRUE(episodes.empty());
}

// The acting values that come with a sequence describe its own steps: the
// Q-values act() was given, and the rewards, episode ends and validity the
// replay stored, across an episode end and after a restart mid-episode.
TEST(SequenceRecorder, ASequenceCarriesTheActingValuesOfItsOwnSteps) {
  Rig rig;
  rig.step(0, 0, 0, envs::kFirst);
  rig.step(0, 1, 1);
  rig.step(0, 2, 2, envs::kTerminated);  // x_2 is final
  rig.step(0, 3, 0, envs::kFirst);
  rig.step(0, 4, 7);
  rig.step(0, 5, 0);
  rig.step(0, 50, 0, envs::kFirst);  // restarted mid-episode: steps 4, 5 dropped
  for (int t = 51; t <= 54; ++t) rig.step(0, static_cast<float>(t), 0.25f);
  std::vector<RecordedSequence> seqs = rig.recorded();
  ASSERT_EQ(seqs.size(), 2u);  // steps 0..3, then 50..53
  for (const RecordedSequence& seq : seqs) {
    const SequenceBatch b = rig.replay->gather({seq.blocks});
    ASSERT_EQ(seq.steps.size(), 4u);
    std::vector<double> q_taken, q_greedy, reward, terminated, truncated, valid;
    for (const ActingStep& s : seq.steps) {
      q_taken.push_back(s.q_taken);
      q_greedy.push_back(s.q_greedy);
      reward.push_back(s.reward);
      terminated.push_back(s.terminated);
      truncated.push_back(s.truncated);
      valid.push_back(s.valid);
    }
    std::vector<double> obs = values(b.steps.at("obs"));
    for (double& x : obs) x += 100;
    EXPECT_EQ(q_taken, obs);
    for (double& x : obs) x += 100;
    EXPECT_EQ(q_greedy, obs);
    EXPECT_EQ(reward, values(b.steps.at("reward")));
    EXPECT_EQ(terminated, values(b.steps.at("terminated")));
    EXPECT_EQ(truncated, values(b.steps.at("truncated")));
    EXPECT_EQ(valid, values(b.steps.at("valid")));
  }
  EXPECT_EQ(values(rig.replay->gather({seqs[0].blocks}).steps.at("valid")), (std::vector<double>{1, 1, 0, 1}));
  EXPECT_EQ(values(rig.replay->gather({seqs[1].blocks}).steps.at("obs")), (std::vector<double>{50, 51, 52, 53}));
}

TEST(SequenceRecorder, SlotsAreIndependentStreamsAndResetSlotForgetsOne) {
  Rig rig;
  for (int t = 0; t < 3; ++t) {
    rig.step(0, static_cast<float>(t), 0, t == 0 ? envs::kFirst : 0);
    rig.step(1, static_cast<float>(50 + t), 0, t == 0 ? envs::kFirst : 0);
  }
  rig.recorder->reset_slot(1);
  EXPECT_EQ(rig.recorder->stats().interrupted_episodes, 1);
  for (int t = 3; t < 5; ++t) rig.step(0, static_cast<float>(t), 0);
  // The slot's first observation after reset_slot starts a stream even without kFirst.
  rig.step(1, 60, 5);
  EXPECT_TRUE(rig.recorder->reset(1));
  EXPECT_EQ(rig.recorder->prev_action(1), -1);
  EXPECT_EQ(rig.recorder->prev_reward(1), 0.f);
  EXPECT_FALSE(rig.recorder->reset(0));
  EXPECT_EQ(rig.recorder->prev_action(0), 13);
  const std::vector<std::vector<BlockRef>> seqs = rig.sequences();
  ASSERT_EQ(seqs.size(), 1u);
  EXPECT_EQ(values(rig.replay->gather(seqs).steps.at("obs")), (std::vector<double>{0, 1, 2, 3}));
}

TEST(SequenceRecorder, CallsOutOfOrderAndBadSlotsAreErrorsThatSaySo) {
  Rig rig;
  const float x = 0;
  const auto* obs = reinterpret_cast<const uint8_t*>(&x);
  EXPECT_EQ(error_text([&] { rig.recorder->act(0, 1, nullptr, nullptr, 0, 0); }),
            "SequenceRecorder::act: slot 0 has no observation to act on");
  rig.recorder->observe(0, obs, 0, envs::kFirst);
  EXPECT_EQ(error_text([&] { rig.recorder->observe(0, obs, 0, 0); }),
            "SequenceRecorder::observe: slot 0 observed twice without act()");
  EXPECT_EQ(error_text([&] { rig.recorder->observe(2, obs, 0, 0); }),
            "SequenceRecorder::observe: slot 2 outside [0, 2)");
  EXPECT_EQ(error_text([] { Rig too_many(/*slots=*/5, /*max_streams=*/4); }),
            "SequenceRecorder: the replay is sized for 4 streams (max_streams) but 5 env slots record into it");
}

}  // namespace
}  // namespace moonseed::engine
