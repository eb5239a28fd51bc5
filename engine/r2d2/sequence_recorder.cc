#include "engine/r2d2/sequence_recorder.h"

#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>

#include "base/check.h"
#include "engine/r2d2/r2d2_trainer.h"
#include "envs/env.h"

namespace moonseed::engine {
SequenceRecorder::SequenceRecorder(int num_slots, const envs::EnvSpec& env, int64_t lstm,
                                   SequenceReplay& replay)
    : replay_(replay), lstm_(lstm), block_length_(replay.block_length()),
      obs_bytes_(env.observation.byte_size()) {
  if (num_slots < 1) {
    throw std::invalid_argument("SequenceRecorder: needs at least 1 slot, got " + std::to_string(num_slots));
  }
  if (replay.config().max_streams < num_slots) {
    throw std::invalid_argument("SequenceRecorder: the replay is sized for " +
                                std::to_string(replay.config().max_streams) + " streams (max_streams) but " +
                                std::to_string(num_slots) + " env slots record into it");
  }
  slots_.reserve(static_cast<size_t>(num_slots));
  for (int i = 0; i < num_slots; ++i) {
    Slot s(replay.config());
    for (const ColumnSpec& c : r2d2_step_columns(env)) {
      s.steps[c.name] = torch::zeros(c.with_leading({block_length_}), torch::dtype(c.dtype));
    }
    for (const ColumnSpec& c : r2d2_start_columns(lstm)) {
      s.starts[c.name] = torch::zeros(c.shape, torch::dtype(c.dtype));
    }
    Rows& r = s.rows;
    r.obs = static_cast<uint8_t*>(s.steps.at("obs").data_ptr());
    r.action = s.steps.at("action").data_ptr<int64_t>();
    r.reward = s.steps.at("reward").data_ptr<float>();
    r.terminated = s.steps.at("terminated").data_ptr<uint8_t>();
    r.truncated = s.steps.at("truncated").data_ptr<uint8_t>();
    r.valid = s.steps.at("valid").data_ptr<uint8_t>();
    r.reset = s.steps.at("reset").data_ptr<uint8_t>();
    r.prev_action = s.steps.at("prev_action").data_ptr<int64_t>();
    r.prev_reward = s.steps.at("prev_reward").data_ptr<float>();
    if (lstm > 0) {
      r.h = s.starts.at("h").data_ptr<float>();
      r.c = s.starts.at("c").data_ptr<float>();
    }
    slots_.push_back(std::move(s));
  }
}

SequenceRecorder::Slot& SequenceRecorder::slot_at(int slot, const char* what) {
  return const_cast<Slot&>(static_cast<const SequenceRecorder*>(this)->slot_at(slot, what));
}

const SequenceRecorder::Slot& SequenceRecorder::slot_at(int slot, const char* what) const {
  base::require_index(slot, num_slots(), "SequenceRecorder::", what, ": slot");
  return slots_[static_cast<size_t>(slot)];
}

void SequenceRecorder::forget(Slot& s) {
  if (s.pending_valid && (s.pending || s.awaiting_action)) stats_.interrupted_episodes += 1;
  s.row = 0;
  s.pending = false;
  s.awaiting_action = false;
  s.episode_seen = false;
  s.episode_return = 0;
  s.env_episode_return = 0;
  s.episode_length = 0;
  s.assembler.reset();
}

void SequenceRecorder::complete_step(int slot_id, Slot& s, float reward, float env_reward, uint8_t flags) {
  const bool terminated = s.pending_valid && (flags & envs::kTerminated) != 0;
  const bool truncated = s.pending_valid && !terminated && (flags & envs::kTruncated) != 0;
  const float r = s.pending_valid ? reward : 0.f;
  s.pending = false;
  if (s.pending_valid) {
    s.episode_return += r;
    s.env_episode_return += env_reward;
    s.episode_length += 1;
    if (terminated || truncated) {
      if (s.episode_seen) {
        finished_.push_back(EpisodeResult{slot_id, s.episode_return, s.episode_length, truncated, s.env_episode_return});
      }
      s.episode_seen = false;
      s.episode_return = 0;
      s.env_episode_return = 0;
      s.episode_length = 0;
    }
  }
  if (!s.recorded) return;  // an evaluation env: tracked above, never stored
  s.rows.reward[s.row] = r;
  s.rows.terminated[s.row] = terminated ? 1 : 0;
  s.rows.truncated[s.row] = truncated ? 1 : 0;
  ActingStep& acting = s.latest();
  acting.reward = r;
  acting.terminated = terminated ? 1 : 0;
  acting.truncated = truncated ? 1 : 0;
  s.steps_written += 1;
  stats_.steps += 1;
  if (++s.row < block_length_) return;
  s.row = 0;
  const BlockRef block = replay_.add_block(s.steps, s.starts);
  stats_.blocks += 1;
  if (std::optional<std::vector<BlockRef>> sequence = s.assembler.push(block)) {
    // Its steps are the slot's last sequence_length recorded ones: the
    // assembler starts over whenever forget() drops steps.
    RecordedSequence out{std::move(*sequence), {}};
    const int64_t n = static_cast<int64_t>(s.acting.size());
    out.steps.reserve(s.acting.size());
    for (int64_t k = s.steps_written - n; k < s.steps_written; ++k) {
      out.steps.push_back(s.acting[static_cast<size_t>(k % n)]);
    }
    sequences_.push_back(std::move(out));
    stats_.sequences += 1;
  }
}

void SequenceRecorder::set_recorded(int slot, bool recorded) {
  Slot& s = slot_at(slot, "set_recorded");
  if (s.recorded != recorded) forget(s);  // no block mixes recorded and dropped steps
  s.recorded = recorded;
}

void SequenceRecorder::observe(int slot, const uint8_t* obs, float reward, uint8_t flags,
                               std::optional<float> env_reward) {
  Slot& s = slot_at(slot, "observe");
  if (s.awaiting_action) {
    throw std::logic_error("SequenceRecorder::observe: slot " + std::to_string(slot) +
                           " observed twice without act()");
  }
  const bool first = (flags & envs::kFirst) != 0;
  if (first && s.pending && s.pending_valid) {
    forget(s);  // restarted mid-episode: the partial block and sequences would straddle the cut
  }
  if (s.pending) complete_step(slot, s, reward, env_reward.value_or(reward), flags);

  const bool starts = first || !s.seen;
  s.prev_action = starts ? -1 : s.last_action;
  s.prev_reward = starts ? 0.f : reward;
  s.reset = starts;
  if (first) {
    s.episode_seen = true;
    s.episode_return = 0;
    s.env_episode_return = 0;
    s.episode_length = 0;
  }
  s.seen = true;
  s.awaiting_action = true;
  s.pending_valid = (flags & (envs::kTerminated | envs::kTruncated)) == 0;

  if (!s.recorded) return;
  std::memcpy(s.rows.obs + s.row * obs_bytes_, obs, static_cast<size_t>(obs_bytes_));
  s.rows.valid[s.row] = s.pending_valid ? 1 : 0;
  s.rows.reset[s.row] = s.reset ? 1 : 0;
  s.rows.prev_action[s.row] = s.prev_action;
  s.rows.prev_reward[s.row] = s.prev_reward;
  s.latest().valid = s.pending_valid ? 1 : 0;
}

void SequenceRecorder::act(int slot, int64_t action, const float* h, const float* c, float q_taken,
                           float q_greedy) {
  Slot& s = slot_at(slot, "act");
  if (!s.awaiting_action) {
    throw std::logic_error("SequenceRecorder::act: slot " + std::to_string(slot) + " has no observation to act on");
  }
  if (s.recorded) {
    s.rows.action[s.row] = action;
    ActingStep& acting = s.latest();
    acting.q_taken = q_taken;
    acting.q_greedy = q_greedy;
    if (s.row == 0 && lstm_ > 0) {
      std::memcpy(s.rows.h, h, static_cast<size_t>(lstm_) * sizeof(float));
      std::memcpy(s.rows.c, c, static_cast<size_t>(lstm_) * sizeof(float));
    }
  }
  s.last_action = action;
  s.awaiting_action = false;
  s.pending = true;
}

int64_t SequenceRecorder::prev_action(int slot) const { return slot_at(slot, "prev_action").prev_action; }
float SequenceRecorder::prev_reward(int slot) const { return slot_at(slot, "prev_reward").prev_reward; }
bool SequenceRecorder::reset(int slot) const { return slot_at(slot, "reset").reset; }

void SequenceRecorder::reset_slot(int slot) {
  Slot& s = slot_at(slot, "reset_slot");
  forget(s);
  s.seen = false;
}

void SequenceRecorder::take_sequences(std::vector<RecordedSequence>& out) {
  for (auto& seq : sequences_) out.push_back(std::move(seq));
  sequences_.clear();
}

void SequenceRecorder::take_finished_episodes(std::vector<EpisodeResult>& out) {
  out.insert(out.end(), finished_.begin(), finished_.end());
  finished_.clear();
}

}  // namespace moonseed::engine
