#include "engine/learner/actor_event.h"

namespace moonseed::engine {

const char* event_name(ActorEvent::Kind kind) {
  switch (kind) {
    case ActorEvent::Kind::kJoined: return "actor_joined";
    case ActorEvent::Kind::kLeft: return "actor_left";
    case ActorEvent::Kind::kHung: return "actor_hung";
    case ActorEvent::Kind::kNotice: return "actor_notice";
  }
  return "actor_event";
}

std::string describe(const ActorEvent& event) {
  std::string line = "actor " + std::to_string(event.actor_id);
  const std::string where = event.host.empty() ? "pid " + std::to_string(event.pid)
                                               : event.host + ", pid " + std::to_string(event.pid);
  switch (event.kind) {
    case ActorEvent::Kind::kJoined: return line + " joined (" + where + ")";
    case ActorEvent::Kind::kLeft: return line + " left (" + where + "): " + event.text;
    case ActorEvent::Kind::kHung: return line + " (" + where + ") is hung: " + event.text;
    case ActorEvent::Kind::kNotice: return line + ": " + event.text;
  }
  return line;
}

}  // namespace moonseed::engine
