// What happens to an actor that the run reports: it joins, leaves, is found
// hung, or sends a notice. The gateway logs each when it happens; the control
// loop writes them to metrics.jsonl (docs/metrics.md).
#pragma once

#include <cstdint>
#include <string>

namespace moonseed::engine {

// Something that happened to an actor, for the run's output and metrics.jsonl.
struct ActorEvent {
  enum class Kind { kJoined, kLeft, kHung, kNotice };
  Kind kind = Kind::kNotice;
  int32_t actor_id = -1;
  std::string host;  // from the actor's Hello
  int32_t pid = 0;
  std::string text;  // kLeft, kHung: the reason; kNotice: the actor's text
  double at_s = 0;   // when: steady-clock seconds (std::chrono::steady_clock's epoch)
};

// "actor_joined", "actor_left", "actor_hung", "actor_notice": the event's name in metrics.jsonl.
const char* event_name(ActorEvent::Kind kind);
// The line the learner prints for `event`, e.g. "actor 2 left (host, pid 41): actor closed the connection".
std::string describe(const ActorEvent& event);

}  // namespace moonseed::engine
