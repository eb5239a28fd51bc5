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
// Limits (ServerOptions; docs/security.md): before its Hello is accepted a
// connection may send frames of max_hello_frame_bytes, must send its Hello
// within hello_timeout, and counts against max_unauthenticated (beyond which
// new connections get a Bye asking them to retry and are closed at once). A
// started frame must be whole within frame_timeout. Each read buffer grows
// with the bytes received, not with a frame's claimed size. accept() that
// fails for want of descriptors or memory is retried with backoff. A
// refusal the service flags as bad credentials counts against the peer's
// TCP address and against a global budget for all addresses (AuthThrottle in
// rpc/guards.h). Warnings a peer can repeat at will are logged at most once
// per log_interval, the refused Hellos as one summary line.
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

// Limits against peers that misbehave on purpose or by accident; the
// defaults suit every run (docs/security.md, "Connections and limits").
struct ServerOptions {
  FrameLimits limits;  // limits.max_frame_bytes bounds every frame read from an admitted actor
  // Until its Hello is accepted a connection may send frames of at most this
  // many bytes (a Hello is a few hundred); a larger one closes it.
  size_t max_hello_frame_bytes = size_t{64} << 10;
  // Connections not admitted yet (no accepted Hello; closing ones count until
  // closed). Beyond this, a new connection gets a Bye that asks it to retry
  // and is closed at once. With max_hello_frame_bytes this bounds what they
  // hold: 64 x 64 KiB = 4 MiB. 0: no cap.
  int max_unauthenticated = 64;
  // A connection that has not sent a whole Hello by then gets a Bye and is closed.
  std::chrono::milliseconds hello_timeout{10000};
  // A frame whose first bytes arrived must be whole within this, else a Bye and close.
  std::chrono::milliseconds frame_timeout{30000};
  // accept() failing for want of descriptors or memory (EMFILE, ENFILE,
  // ENOBUFS, ENOMEM) is retried after a pause that doubles from the first to the max.
  std::chrono::milliseconds accept_backoff_first{10};
  std::chrono::milliseconds accept_backoff_max{1000};
  // Warnings a peer can cause at will (accept failures, connections over the
  // cap, Hellos from a blocked address): at most one line per interval.
  std::chrono::milliseconds log_interval{10000};
  // Wrong auth tokens (Admission::bad_credentials) per TCP address: from the
  // auth_free_failures-th on, that address's Hellos are refused unchecked for
  // auth_block_first, doubling per further failure up to auth_block_max. An
  // admitted Hello, or auth_forget_after without a failure, clears the
  // address; at most auth_tracked_peers addresses are kept. Unix socket peers
  // (mode 0600: the learner's own user) are not throttled.
  int auth_free_failures = 3;
  std::chrono::milliseconds auth_block_first{1000};
  std::chrono::milliseconds auth_block_max{60000};
  std::chrono::milliseconds auth_forget_after{600000};
  size_t auth_tracked_peers = 1024;
  // The global budget of wrong tokens, from all TCP addresses together: a
  // token bucket of auth_budget_burst failed checks, refilled by
  // auth_budget_per_s. While it is spent, Hellos from addresses never admitted
  // before are refused unchecked with a Bye that asks the actor to retry (the
  // last auth_tracked_peers admitted addresses are still checked). Refused
  // Hellos are summed up in one line per log_interval. auth_budget_per_s 0: no
  // global budget.
  double auth_budget_per_s = 10;
  int auth_budget_burst = 100;
  // Threads that run the sockets. 0: none; the owner pumps them with
  // run_for() from a thread of its own (run-to-completion, e.g. the
  // learner's inference thread), which saves a thread hop per message.
  int io_threads = 1;
  // How long a closing connection may take to flush its Bye before it is cut.
  std::chrono::milliseconds close_grace{1000};
};

// What the server holds now and what it has refused since it started.
struct ServerStats {
  int64_t connections = 0;                   // open now
  int64_t unauthenticated = 0;               // open now and not admitted (yet)
  int64_t buffer_bytes = 0;                  // held by every connection's read buffer
  int64_t unauthenticated_buffer_bytes = 0;  // of which by connections not admitted
  int64_t bytes_received = 0;                // from every connection, since start
  // Since start:
  int64_t refused_over_cap = 0;     // closed at once: max_unauthenticated were waiting
  int64_t hello_timeouts = 0;       // no Hello within hello_timeout
  int64_t frame_timeouts = 0;       // a frame not whole within frame_timeout
  int64_t oversized_hellos = 0;     // a frame above max_hello_frame_bytes before admission
  int64_t auth_failures = 0;        // Hellos refused for a wrong token
  int64_t hellos_throttled = 0;     // Hellos refused unchecked (address blocked or global budget spent)
  int64_t hellos_over_budget = 0;   // of which for the global budget
  int64_t accept_failures = 0;      // accept() calls that failed
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

  // Any thread; the counts are read one by one, not as one snapshot.
  ServerStats stats() const;

  // Stops accepting, sends Bye{"learner stopping"} to every connection, closes
  // them (on_disconnect for each connected actor), joins the io threads.
  // Idempotent. The server cannot be started again.
  void stop();

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace moonseed::rpc
