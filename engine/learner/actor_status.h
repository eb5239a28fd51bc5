// Each actor slot as the learner sees it now: who is connected, from where,
// how much it sent and how often it came back. The learner keeps the counts
// (ActorGateway); `moonseed ctl status` and the dashboard show them, with a
// rate per actor worked out between two log ticks (cli/engine/actor_rates.h).
// Plain values, no LibTorch.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace moonseed::engine {

struct ActorStatus {
  int32_t id = 0;
  bool connected = false;
  std::string host;  // from the Hello of its current (or, once it left, its last) connection
  int32_t pid = 0;   // likewise
  // Env steps received from this slot over all its connections, reset
  // observations excluded (what LearnerStats::frames counts for the run).
  uint64_t frames = 0;
  uint64_t connections = 0;  // times an actor was admitted to this slot
  // Seconds since its current connection was admitted; NaN when it is not connected.
  double connected_s = std::numeric_limits<double>::quiet_NaN();
};

// An actor that ActorGateway::release_hung let go: its slot, how long it was
// silent, and the timeout it was allowed.
struct HungActor {
  int32_t id = 0;
  double silent_s = 0;
  double timeout_s = 0;
};

// The slots that were ever connected, by id, at most as many as asked for.
struct ActorList {
  std::vector<ActorStatus> actors;
  int64_t not_listed = 0;  // slots ever connected beyond the limit
};

}  // namespace moonseed::engine
