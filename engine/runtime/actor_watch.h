// Tells a hung actor from a slow one, per actor slot, without locks: the hot
// path touches it once per StepBatch received and once per reply sent.
//
// An actor runs G env groups (topology.groups_per_actor, at most its envs);
// each group has one StepBatch either with the learner (waiting for actions)
// or with the actor (stepping its envs). So an actor with fewer than G batches
// waiting on the learner owes the learner a batch. One that owes a batch and
// has been silent for longer than its timeout is hung: SIGSTOPped, stuck in
// its env, or cut off without the socket noticing. A learner that stops
// answering never makes its actors look hung: they owe nothing while all
// their batches wait on it.
//
// The timeout is the larger of a floor (topology.actor_timeout_s) and
// kStepMultiple times the actor's usual step time (a running average of how
// long it takes to send a batch after the learner's last move), so an env
// that takes seconds per step is not taken for hung.
//
// Each connection of a slot has a generation; a reply counted against an
// older connection (a request answered after its actor went away) is ignored.
//
// Thread-safety: every method may be called from any thread. The per-slot
// fields are independent atomics, so a reader can see one of them updated and
// another not yet; silent() then errs by one batch, which a timeout of many
// step times absorbs.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "engine/runtime/clock.h"

namespace moonseed::engine {

class ActorWatch {
 public:
  static constexpr double kStepMultiple = 20;

  // `groups`: batches each actor keeps in flight (its env groups).
  ActorWatch(int actors, int groups);

  // A new connection for slot `id` starts now; returns its generation.
  uint64_t connected(int id, Clock::time_point now);
  void disconnected(int id);
  // The actor in slot `id` sent a StepBatch.
  void batch_received(int id, Clock::time_point now);
  // The learner answered one batch of connection `generation` of slot `id`.
  void replied(int id, uint64_t generation, Clock::time_point now);

  // The generation of slot `id`'s newest connection (0 before the first).
  uint64_t generation(int id) const;
  // StepBatches slot `id` has sent over all its connections (never goes down).
  uint64_t batches(int id) const;

  struct Silence {
    int actor_id = 0;
    double silent_s = 0;   // since the actor last sent, or the learner last answered it
    double timeout_s = 0;  // what it was allowed
  };
  // Connected actors that owe a batch and were silent longer than
  // max(floor_s, kStepMultiple * usual step time), by slot. floor_s <= 0: none.
  std::vector<Silence> silent(Clock::time_point now, double floor_s) const;

 private:
  struct Slot {
    std::atomic<bool> connected{false};
    std::atomic<uint64_t> generation{0};
    std::atomic<int64_t> waiting{0};        // batches with the learner
    std::atomic<int64_t> last_move_ns{0};   // last batch received or reply sent
    std::atomic<int64_t> step_ns{0};        // running average step time, 0 = no sample yet
    std::atomic<uint64_t> batches{0};
  };
  Slot& slot(int id) const;

  const int actors_;
  const int groups_;
  std::unique_ptr<Slot[]> slots_;
};

}  // namespace moonseed::engine
