// The narrow interface the rpc server serves: the learner implements it.
// rpc/ owns sockets and codecs; the service sees plain messages only.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "rpc/messages.h"

namespace moonseed::rpc {

// Sends messages back to one connected actor. Thread-safe; calls after the
// connection closed are dropped silently (the actor is gone).
class ActorLink {
 public:
  virtual ~ActorLink() = default;
  virtual void send_actions(ActionBatch&& actions) = 0;
  virtual void send_config(ConfigUpdate&& update) = 0;
  virtual void send_bye(const std::string& reason) = 0;  // then closes
  // A Bye that tells the actor to connect again (Bye::reconnect), then closes.
  virtual void send_reconnect(const std::string& reason) = 0;
  virtual int32_t actor_id() const = 0;
};

// Outcome of a Hello.
struct Admission {
  bool accepted = false;
  std::string reason;  // why not, sent to the actor in a Bye
  // Refused for a wrong auth token: the server counts it and, after a few
  // from one TCP address, refuses that address's Hellos for a while.
  bool bad_credentials = false;
  // Not refused but placed elsewhere (a Hello with any_rank, in a learner
  // group): the Bye asks the actor to connect to this address instead.
  std::string redirect;
  Welcome welcome;
};

// Called from the server's io thread(s). Implementations must not block for
// long: hand work to other threads.
class ActorService {
 public:
  virtual ~ActorService() = default;
  virtual Admission on_hello(const Hello& hello) = 0;
  // After an accepted Hello. `link` stays valid until on_disconnect returns.
  virtual void on_connect(std::shared_ptr<ActorLink> link) = 0;
  // One decoded StepBatch. The service replies through the link.
  virtual void on_steps(const std::shared_ptr<ActorLink>& link, StepBatch&& batch) = 0;
  // The connection ended: Bye, EOF, error or bad frame (reason says which).
  // `link` is the one on_connect was given for this connection.
  virtual void on_disconnect(const std::shared_ptr<ActorLink>& link, const std::string& reason) = 0;
  // An ActorNotice from a connected actor. Does nothing unless overridden.
  virtual void on_notice(const std::shared_ptr<ActorLink>& link, const ActorNotice& notice) {}
};

}  // namespace moonseed::rpc
