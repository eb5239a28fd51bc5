#include "engine/runtime/actor_watch.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace moonseed::engine {
namespace {

int64_t ns_of(Clock::time_point t) { return t.time_since_epoch().count(); }

}  // namespace

ActorWatch::ActorWatch(int actors, int groups)
    : actors_(actors), groups_(std::max(1, groups)), slots_(new Slot[static_cast<size_t>(std::max(0, actors))]) {}

ActorWatch::Slot& ActorWatch::slot(int id) const {
  if (id < 0 || id >= actors_) {
    throw std::out_of_range("actor slot " + std::to_string(id) + " outside 0.." + std::to_string(actors_ - 1));
  }
  return slots_[static_cast<size_t>(id)];
}

uint64_t ActorWatch::connected(int id, Clock::time_point now) {
  Slot& s = slot(id);
  const uint64_t generation = s.generation.fetch_add(1, std::memory_order_relaxed) + 1;
  s.waiting.store(0, std::memory_order_relaxed);
  s.step_ns.store(0, std::memory_order_relaxed);
  s.last_move_ns.store(ns_of(now), std::memory_order_relaxed);
  s.connected.store(true, std::memory_order_release);
  return generation;
}

void ActorWatch::disconnected(int id) { slot(id).connected.store(false, std::memory_order_release); }

void ActorWatch::batch_received(int id, Clock::time_point now) {
  Slot& s = slot(id);
  const int64_t t = ns_of(now);
  const int64_t sample = std::max<int64_t>(0, t - s.last_move_ns.load(std::memory_order_relaxed));
  // One writer per slot (the connection's io strand): load-then-store is enough.
  const int64_t average = s.step_ns.load(std::memory_order_relaxed);
  s.step_ns.store(average == 0 ? std::max<int64_t>(1, sample) : average + (sample - average) / 8,
                  std::memory_order_relaxed);
  s.last_move_ns.store(t, std::memory_order_relaxed);
  s.waiting.fetch_add(1, std::memory_order_relaxed);
  s.batches.fetch_add(1, std::memory_order_relaxed);
}

void ActorWatch::replied(int id, uint64_t generation, Clock::time_point now) {
  Slot& s = slot(id);
  if (s.generation.load(std::memory_order_relaxed) != generation) return;
  s.waiting.fetch_sub(1, std::memory_order_relaxed);
  s.last_move_ns.store(ns_of(now), std::memory_order_relaxed);
}

uint64_t ActorWatch::generation(int id) const { return slot(id).generation.load(std::memory_order_relaxed); }

uint64_t ActorWatch::batches(int id) const { return slot(id).batches.load(std::memory_order_relaxed); }

std::vector<ActorWatch::Silence> ActorWatch::silent(Clock::time_point now, double floor_s) const {
  std::vector<Silence> out;
  if (floor_s <= 0) return out;
  for (int id = 0; id < actors_; ++id) {
    const Slot& s = slots_[static_cast<size_t>(id)];
    if (!s.connected.load(std::memory_order_acquire)) continue;
    if (s.waiting.load(std::memory_order_relaxed) >= groups_) continue;  // the learner owes it
    const double silent_s = static_cast<double>(ns_of(now) - s.last_move_ns.load(std::memory_order_relaxed)) * 1e-9;
    const double usual_s = static_cast<double>(s.step_ns.load(std::memory_order_relaxed)) * 1e-9;
    const double timeout_s = std::max(floor_s, kStepMultiple * usual_s);
    if (silent_s > timeout_s) out.push_back(Silence{id, silent_s, timeout_s});
  }
  return out;
}

}  // namespace moonseed::engine
