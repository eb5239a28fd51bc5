// UnrollStore: one partial unroll per env slot, filled by the inference thread
// step by step; a complete unroll (T+1 observations) comes out as an Unroll,
// and its last step becomes step 0 of the slot's next unroll (overlap 1).
//
// Per env slot the inference thread calls, in turn,
//   observe(slot, x_t, reward, flags)   reward/flags are what a_{t-1} produced
//   act(slot, a_t, log mu(a_t|x_t), policy_version)
// so step t of an unroll holds x_t, a_t, mu, and then r_t, terminated_t,
// truncated_t from the *next* observe() (docs/architecture.md, "next step"
// autoreset):
//   - valid_t = 0 when x_t is a final observation (its message has kTerminated
//     or kTruncated): the actor ignores a_t and resets the env.
//   - the step after a final observation is the reset observation (kFirst); the
//     final step gets reward 0 and no flags, since its action did nothing.
//   - kFirst after a *valid* step means the env was restarted without a final
//     observation (an actor reconnected): the slot's partial unroll and
//     episode are dropped, and the new observation starts a fresh unroll.
//
// Step T of an emitted unroll holds only x_T and valid_T: its action, log mu,
// reward, flags and policy version are zero (they belong to step 0 of the next
// unroll, which gets them from the following act()/observe()). The trainer
// reads only x_T (bootstrap) and valid_T from it.
//
// Ownership: Unrolls come from an UnrollPool and go back to it when the
//   UnrollPtr is destroyed, on any thread; the pool lives as long as any of
//   its unrolls. The store holds one in-progress unroll per slot.
// Failure: wrong call order for a slot (observe twice without act, act before
//   observe) is a bug of the caller: std::logic_error. A slot out of range is
//   std::invalid_argument. Protocol surprises from actors (see kFirst above)
//   are handled and counted, never thrown. Actors cannot cause the order
//   errors: the gateway lets one step per env and connection in flight and the
//   learner drops steps of replaced connections; should one happen anyway, the
//   learner closes the connection whose step it was handling and resets its
//   slots (docs/security.md).
// Thread-safety: UnrollStore is used by the inference thread only. UnrollPool
//   is thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "base/mutex.h"
#include "envs/spec.h"

namespace moonseed::engine {

// What one step of an unroll stores, in bytes, and how the prefetcher shapes it.
struct UnrollShape {
  int64_t unroll_length = 0;                // T; an unroll holds T+1 steps
  std::vector<int64_t> observation_shape;   // per env, e.g. {4} or {84, 84, 4}
  envs::DType observation_dtype = envs::DType::kFloat32;
  envs::SpaceKind action_kind = envs::SpaceKind::kDiscrete;
  int64_t action_dim = 1;                   // A for a box (all elements, flattened); 1 for discrete
  int64_t state_size = 0;                   // H of a recurrent policy's LSTM; 0: feed-forward

  int64_t observation_bytes() const;
  // Discrete actions are stored as int64, box actions as float32[A].
  int64_t action_bytes() const;

  // Throws std::invalid_argument for T < 1 or spaces the learner cannot train on
  // (discrete observations, non-float32 box actions), naming the spec.
  static UnrollShape from_spec(const envs::EnvSpec& spec, int64_t unroll_length);
};

// One complete unroll of T+1 steps, each field step-major ([t] or [t][bytes]).
struct Unroll {
  int32_t slot = -1;
  std::vector<uint8_t> observations;    // (T+1) * observation_bytes
  std::vector<uint8_t> actions;         // (T+1) * action_bytes
  std::vector<float> behaviour_logp;    // T+1
  std::vector<float> rewards;           // T+1
  // T+1: the env's own r_t, before the actor's reward shaping rewrote it into
  // rewards[t]; the same as rewards[t] without shaping.
  std::vector<float> env_rewards;
  std::vector<uint8_t> terminated;      // T+1, 0/1
  std::vector<uint8_t> truncated;       // T+1, 0/1
  std::vector<uint8_t> valid;           // T+1, 0/1
  std::vector<int64_t> policy_version;  // T+1
  // T+1: the config version the actor stepped under when it sent x_t (the
  // StepBatch's; hot reload, docs/experiments-design.md). Step T keeps x_T's.
  std::vector<uint64_t> config_version;
  // T+1, for the experience log (engine/learner/experience_recorder.h): the episode x_t
  // belongs to (ids from UnrollStore's counter, unique within one store), its
  // index within that episode, and the envs::StepFlag bits x_t arrived with.
  std::vector<int64_t> episode_id;
  std::vector<int64_t> episode_step;
  std::vector<uint8_t> obs_flags;
  int64_t wall_time_ns = 0;  // system clock when x_T arrived
  // A recurrent policy's inputs at step 0, after any episode-start reset (empty
  // for a feed-forward policy): its state, 2 * state_size floats (h, then c),
  // and the previous action (action_bytes: -1 or zeros for none) and reward.
  std::vector<float> start_state;
  std::vector<uint8_t> start_prev_action;
  float start_prev_reward = 0;
};

// What a recurrent policy acted with at one step (UnrollStore::act).
struct RecurrentInputs {
  const float* h = nullptr;            // state_size floats
  const float* c = nullptr;            // state_size floats
  const void* prev_action = nullptr;   // action_bytes
  float prev_reward = 0;
};

class UnrollPool;

// Returns an Unroll to its pool.
struct UnrollReturner {
  std::shared_ptr<UnrollPool> pool;
  void operator()(Unroll* unroll) const;
};
using UnrollPtr = std::unique_ptr<Unroll, UnrollReturner>;

// A free-list of Unrolls sized for one UnrollShape. acquire() reuses a
// returned unroll when there is one and allocates otherwise, so in steady
// state nothing is allocated.
class UnrollPool : public std::enable_shared_from_this<UnrollPool> {
 public:
  // Preallocates `initial` unrolls.
  static std::shared_ptr<UnrollPool> create(const UnrollShape& shape, int64_t initial = 0);

  UnrollPool(const UnrollPool&) = delete;
  UnrollPool& operator=(const UnrollPool&) = delete;

  UnrollPtr acquire();

  const UnrollShape& shape() const { return shape_; }
  // Unrolls ever allocated by this pool (in use + free).
  int64_t allocated() const EXCLUDES(mu_);
  // Unrolls waiting in the free-list.
  int64_t available() const EXCLUDES(mu_);

 private:
  friend struct UnrollReturner;
  explicit UnrollPool(const UnrollShape& shape);
  void release(Unroll* unroll) EXCLUDES(mu_);
  std::unique_ptr<Unroll> allocate() const;

  const UnrollShape shape_;
  mutable base::Mutex mu_;
  std::vector<std::unique_ptr<Unroll>> free_ GUARDED_BY(mu_);
  int64_t allocated_ GUARDED_BY(mu_) = 0;
};

// An episode that ended (kTerminated or kTruncated) in a slot whose start
// (kFirst) the store saw.
struct EpisodeResult {
  int32_t slot = 0;
  double episode_return = 0;  // sum of the rewards training used (shaped when shaping is on)
  int64_t length = 0;         // actions taken in the episode
  bool truncated = false;     // ended by kTruncated rather than kTerminated
  double env_return = 0;      // sum of the env's own rewards (before shaping)
};

struct UnrollStoreStats {
  int64_t observations = 0;
  int64_t unrolls = 0;                 // emitted
  int64_t episodes = 0;                // reported in EpisodeResults
  int64_t interrupted_episodes = 0;    // kFirst arrived after a valid step
};

class UnrollStore {
 public:
  // Slots are 0..num_slots-1. Throws std::invalid_argument for num_slots < 1.
  UnrollStore(int num_slots, std::shared_ptr<UnrollPool> pool);

  // Records x_t of `slot` (pool().shape().observation_bytes() bytes at `obs`)
  // and completes step t-1 with `reward` and `flags` (envs::StepFlag bits).
  // Returns the completed unroll when x_t was its x_T, else an empty pointer.
  // `config_version` is the StepBatch's, recorded for step t; `env_reward` the
  // env's own reward before shaping (Unroll::env_rewards), `reward` when absent.
  UnrollPtr observe(int slot, const uint8_t* obs, float reward, uint8_t flags,
                    uint64_t config_version = 0, std::optional<float> env_reward = std::nullopt);

  // Records a_t (action_bytes() bytes at `action`), its behaviour log-prob and
  // the policy version it was chosen under, for the slot's latest observation.
  // A recurrent policy passes what it acted with: kept as the unroll's start_*
  // when this is its step 0.
  void act(int slot, const void* action, float behaviour_logp, int64_t policy_version,
           const RecurrentInputs* recurrent = nullptr);

  // Forgets the slot's partial unroll and episode (its actor went away); the
  // next observe() starts afresh.
  void reset_slot(int slot);

  // Episode ids: every episode the store sees start (kFirst, or a slot's
  // first observation) takes the next id, from 0 unless set here (a resumed
  // run continues its log's ids). Only before the first observe().
  void set_next_episode_id(int64_t id);

  // Moves the episodes finished since the last call to the end of `out`.
  void take_finished_episodes(std::vector<EpisodeResult>& out);

  int num_slots() const { return static_cast<int>(slots_.size()); }
  const UnrollPool& pool() const { return *pool_; }
  const UnrollStoreStats& stats() const { return stats_; }

 private:
  struct Slot {
    UnrollPtr unroll;             // in progress
    int64_t t = -1;               // step of the latest observation, -1 before the first
    bool awaiting_action = false; // observed x_t, act() not called yet
    bool episode_seen = false;    // this episode started with a kFirst we saw
    double episode_return = 0;
    double env_episode_return = 0;
    int64_t episode_length = 0;
    int64_t episode_id = -1;      // of the slot's latest observation
    int64_t episode_step = 0;     // ... and its index within the episode
  };

  Slot& slot_at(int slot, const char* what);
  // Fills reward/flags of step t (the last acted one) and the episode record.
  void complete_step(int slot_id, Slot& s, float reward, float env_reward, uint8_t flags);

  std::shared_ptr<UnrollPool> pool_;
  int64_t obs_bytes_ = 0;
  int64_t action_bytes_ = 0;
  int64_t T_ = 0;
  std::vector<Slot> slots_;
  std::vector<EpisodeResult> finished_;
  UnrollStoreStats stats_;
  int64_t next_episode_id_ = 0;
};

}  // namespace moonseed::engine
