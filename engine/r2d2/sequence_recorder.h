// SequenceRecorder: R2D2's counterpart of UnrollStore. It turns each env
// slot's stream of steps into blocks of the SequenceReplay (r2d2_step_columns,
// engine/r2d2/r2d2_trainer.h) and, through one SequenceAssembler per slot, into
// complete sequences of burn_in + trace steps that overlap by the replay's period.
//
// Per slot the inference thread calls, in turn,
//   observe(slot, x_t, reward, flags)   reward/flags are what a_{t-1} produced
//   act(slot, a_t, h, c, q_taken, q_greedy)
//                                       h, c: the recurrent state the net read at x_t;
//                                       q_taken = Q(x_t, a_t), q_greedy = max_a Q(x_t, a)
// and between the two asks prev_action(slot) / prev_reward(slot) / reset(slot)
// for what the net is fed at x_t. Step t is written when x_{t+1} arrives
// ("next step" autoreset, docs/architecture.md):
//   - valid_t = 0 when x_t is a final observation (kTerminated / kTruncated);
//     the step holding it gets reward 0 and no flags (its action did nothing);
//   - reset_t = 1, prev_action_t = -1, prev_reward_t = 0 when x_t starts an
//     episode (kFirst), or is the first observation the slot has seen;
//   - kFirst after a valid step (an actor reconnected mid-episode) drops the
//     slot's partial block and its assembler's blocks: no sequence straddles
//     the cut. reset_slot() does the same when an actor goes away.
// A block's start state is the (h, c) given to act() for its first step.
//
// The sequences come out through take_sequences() as block references, in the
// order they completed, each with its steps' ActingStep (the Q-values act()
// was given and what the actions produced: engine/r2d2/r2d2_trainer.h); the
// caller computes their priorities and inserts them (SequenceReplay::insert),
// right away, before the ring overwrites their blocks.
//
// Errors: a slot out of range is std::invalid_argument; calls out of order
// (observe twice without act, act before observe) are a caller bug:
// std::logic_error. A replay sized for fewer streams than slots is refused at
// construction, naming both numbers.
// Thread-safety: the inference thread only (like UnrollStore). The replay it
// writes to is thread-safe on its own.
#pragma once

#include <cstdint>
#include <optional>
#include <map>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "engine/replay/sequence_replay.h"
#include "engine/learner/unroll_store.h"
#include "engine/r2d2/r2d2_trainer.h"
#include "envs/spec.h"

namespace moonseed::engine {

struct RecordedSequence {
  std::vector<BlockRef> blocks;
  std::vector<ActingStep> steps;  // one per step of the sequence, oldest first
};

struct SequenceRecorderStats {
  int64_t steps = 0;                 // written into blocks
  int64_t blocks = 0;                // added to the replay
  int64_t sequences = 0;             // completed
  int64_t interrupted_episodes = 0;  // kFirst after a valid step, or reset_slot mid-episode
};

class SequenceRecorder {
 public:
  // `replay` (not owned) must have r2d2_step_columns(env) and
  // r2d2_start_columns(lstm) and outlive the recorder.
  SequenceRecorder(int num_slots, const envs::EnvSpec& env, int64_t lstm, SequenceReplay& replay);

  // env_reward: the env's own reward when `reward` was shaped (default: reward itself).
  void observe(int slot, const uint8_t* obs, float reward, uint8_t flags, std::optional<float> env_reward = {});
  // h and c: `lstm` floats each (ignored when lstm == 0; may be null then).
  // q_taken, q_greedy: the acting net's values (NaN when no net acted).
  void act(int slot, int64_t action, const float* h, const float* c, float q_taken, float q_greedy);

  // What the net is fed at the slot's latest observation.
  int64_t prev_action(int slot) const;
  float prev_reward(int slot) const;
  bool reset(int slot) const;

  // Forgets the slot's partial block and sequences in progress.
  void reset_slot(int slot);
  // An unrecorded slot (an evaluation env) is tracked as any other (what the
  // net is fed, its episodes) but writes no rows and never adds blocks or
  // sequences. Default: recorded.
  void set_recorded(int slot, bool recorded);

  // Moves the sequences completed since the last call to the end of `out`.
  void take_sequences(std::vector<RecordedSequence>& out);
  // Moves the episodes finished since the last call to the end of `out`.
  void take_finished_episodes(std::vector<EpisodeResult>& out);

  int num_slots() const { return static_cast<int>(slots_.size()); }
  const SequenceRecorderStats& stats() const { return stats_; }

 private:
  // Where one slot's block columns live: looked up once, written per step.
  struct Rows {
    uint8_t* obs = nullptr;  // [g, obs bytes]
    int64_t* action = nullptr;
    float* reward = nullptr;
    uint8_t* terminated = nullptr;
    uint8_t* truncated = nullptr;
    uint8_t* valid = nullptr;
    uint8_t* reset = nullptr;
    int64_t* prev_action = nullptr;
    float* prev_reward = nullptr;
    float* h = nullptr;  // [lstm], null without an LSTM
    float* c = nullptr;
  };

  struct Slot {
    std::map<std::string, torch::Tensor> steps;   // [g, ...] per step column
    std::map<std::string, torch::Tensor> starts;  // [lstm] h, c
    Rows rows;                                    // into steps and starts
    int64_t row = 0;               // steps complete in the block; the latest step is row `row`
    bool seen = false;             // observed anything since construction / reset_slot
    bool awaiting_action = false;  // observed x_t, act() not yet
    bool pending = false;          // acted at x_t, waiting for x_{t+1}
    bool pending_valid = false;    // x_t of the pending step was not a final observation
    int64_t last_action = -1;
    int64_t prev_action = -1;      // fed at the latest observation
    float prev_reward = 0;
    bool reset = true;
    bool episode_seen = false;     // the episode started with a kFirst we saw
    bool recorded = true;          // false: evaluation env, its blocks are dropped
    double episode_return = 0;
    double env_episode_return = 0;
    int64_t episode_length = 0;
    SequenceAssembler assembler;
    // The acting values of the last sequence_length recorded steps: step k of
    // the stream at k % sequence_length; the latest step is at `steps_written`.
    std::vector<ActingStep> acting;
    int64_t steps_written = 0;  // steps completed since construction
    explicit Slot(const SequenceReplayConfig& config)
        : assembler(config), acting(static_cast<size_t>(config.sequence_length)) {}
    ActingStep& latest() { return acting[static_cast<size_t>(steps_written % static_cast<int64_t>(acting.size()))]; }
  };

  Slot& slot_at(int slot, const char* what);
  const Slot& slot_at(int slot, const char* what) const;
  // Completes the pending step with what a_t produced; flushes a full block.
  void complete_step(int slot_id, Slot& s, float reward, float env_reward, uint8_t flags);
  void forget(Slot& s);

  SequenceReplay& replay_;
  int64_t lstm_;
  int64_t block_length_;
  int64_t obs_bytes_;
  std::vector<Slot> slots_;
  std::vector<RecordedSequence> sequences_;
  std::vector<EpisodeResult> finished_;
  SequenceRecorderStats stats_;
};

}  // namespace moonseed::engine
