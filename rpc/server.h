// The learner side of the actor protocol: accepts actor connections on Unix
// and/or TCP sockets and serves them to an ActorService.
//
// Per connection: the first frame must be a Hello with kProtocolVersion (else
// a Bye naming the mismatch, then close); service.on_hello decides admission
// (refused: Bye with the service's reason, then close); accepted: Welcome is
// sent, then service.on_connect(link). Each StepBatch goes to
// service.on_steps(link, batch), each ActorNotice to service.on_notice. A
// malformed or oversized frame, or a message the learner never expects from an
// actor, closes that connection only: one line naming the peer and the reason
// goes to stderr, the actor gets a Bye with the reason (best effort), and
// service.on_disconnect(link, reason) is called. on_disconnect is called
// exactly once for every connection that was given to on_connect, and never for
// the others.
//
// Ownership: the Server borrows the service, which must outlive it. Links given
// to the service may be kept past the server's destruction: their send_*
// calls are then dropped.
//
// Threading: service callbacks run on the io thread(s), one connection's
// callbacks never concurrently. ActorLink::send_* may be called from any
// thread; they post to the connection's strand, which writes frames in order,
// one async write at a time (queued frames are gathered into one write).
// listen(), start() and stop() are for the owning thread; stop() must not be
// called from a service callback (it joins the io threads).
//
// Failure: listen() throws std::invalid_argument for a bad address text and
// std::system_error when the socket cannot be bound (the message names the
// address). A live Unix socket at the path is "address in use"; a stale one
// (nothing accepts on it) is removed; a non-socket file there is never removed.
#pragma once

#include <chrono>
#include <memory>
#include <string_view>

#include "rpc/address.h"
#include "rpc/codec.h"
#include "rpc/service.h"

namespace moonseed::rpc {

struct ServerOptions {
  FrameLimits limits;  // limits.max_frame_bytes bounds every frame read from an actor
  // Threads that run the sockets. 0: none; the owner pumps them with
  // run_for() from a thread of its own (run-to-completion, e.g. the
  // learner's inference thread), which saves a thread hop per message.
  int io_threads = 1;
  // How long a closing connection may take to flush its Bye before it is cut.
  std::chrono::milliseconds close_grace{1000};
};

class Server {
 public:
  explicit Server(ActorService& service, ServerOptions options = {});
  ~Server();  // stop()
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Binds and listens; returns the bound address (for tcp:HOST:0 the port the
  // system chose). A Unix socket file is created with mode 0600 and removed by
  // stop(). May be called several times, before or after start().
  Address listen(const Address& address);
  Address listen(std::string_view address);

  // Runs the io threads. Connections are accepted from here on.
  void start();

  // With io_threads = 0: runs ready socket work, waiting at most `max_wait`
  // for some to arrive. Any one thread at a time; safe alongside stop().
  void run_for(std::chrono::nanoseconds max_wait);
  // Makes a run_for() that is waiting return soon. Any thread.
  void wake();

  // Stops accepting, sends Bye{"learner stopping"} to every connection, closes
  // them (on_disconnect for each connected actor), joins the io threads.
  // Idempotent. The server cannot be started again.
  void stop();

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace moonseed::rpc
