// Env steps per second of each actor, over the last log interval: the run
// samples the learner's actor list at each log tick (sample()), and
// `ctl status` (and so the dashboard) shows each listed actor with the rate of
// its last interval (json()). A connection's first sample has no rate yet
// (null), nor has an actor that is not connected.
// Not thread-safe: the control loop owns it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>

#include "engine/learner/actor_status.h"

namespace moonseed::cli {

class ActorRates {
 public:
  // Actors `ctl status` lists at most; the rest are only counted.
  static constexpr size_t kMaxListed = 256;

  // Takes `list` as the state at `t_s` (seconds, any steady origin): each
  // actor's rate is its frames since the previous sample over the time since,
  // when it was connected at both on the same connection.
  void sample(const engine::ActorList& list, double t_s);

  // Env steps per second of actor `status` over the last interval; NaN when
  // there is none (first sample of its connection, or it is not connected now
  // on the connection sampled).
  double fps(const engine::ActorStatus& status) const;

  // `list` as the JSON `ctl status` holds under "actor_list": an array of
  // {"id", "connected", "host", "pid", "frames", "fps", "connections",
  // "connected_s"}, by id (NaN as null).
  std::string json(const engine::ActorList& list) const;

 private:
  struct Sample {
    uint64_t frames = 0;
    uint64_t connections = 0;
    bool connected = false;
    double fps = 0;  // NaN: no rate
  };
  std::unordered_map<int32_t, Sample> last_;
  double last_t_s_ = 0;
};

}  // namespace moonseed::cli
