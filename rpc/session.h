// One actor connection on the learner: reads frames, runs the handshake,
// hands StepBatches to the service, writes replies. Internal to rpc/server.cc.
//
// Ownership: a Session is owned by shared_ptrs held in its own pending asio
// handlers; the server's registry and the ActorLink given to the service hold
// only weak references, so a session dies once its socket is closed and its
// last handler has run. The ActorLink (SessionLink) may outlive the session and
// the server; the SendGate makes its sends no-ops once the server has stopped.
//
// Threading: every member function except post_* runs on the socket's
// executor, which runs one handler at a time (a strand, or the io_context of
// a server with one io thread or none). post_* may be called from any thread.
//
// Replies take a fast path: a service thread writes an ActionBatch or
// ConfigUpdate straight to the socket (non-blocking) when nothing else is
// queued or being written, which saves a wake-up of the io thread per reply;
// otherwise it queues the frame itself, so frames go out in call order. The
// write side (queues, in-flight flag, direct writes) is guarded by write_mu_,
// a leaf lock; a partial direct write leaves its remainder at the head of the
// queue for the strand to finish, so frames never interleave.
//
// Lock order: the server's run_mu_ (held by a pump running handlers) ->
// SendGate::mutex (a service replying from inside a handler) -> write_mu_.
// The server's sessions_mutex_ comes after run_mu_ (forget() from a handler)
// and is never held with the other two.
#pragma once

#include <asio.hpp>

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/mutex.h"
#include "rpc/codec.h"
#include "rpc/frame_reader.h"
#include "rpc/guards.h"
#include "rpc/server.h"
#include "rpc/service.h"

namespace moonseed::rpc::detail {

// Closed by Server::stop(): once closed, links post nothing to the io_context
// (which may be gone). Sends hold the lock shared while posting for that
// reason; only closing takes it exclusively, so senders never wait on each other.
struct SendGate {
  base::SharedMutex mutex;
  bool open GUARDED_BY(mutex) = true;
};

// ServerStats as the sessions and the acceptor count them (relaxed atomics).
struct ServerCounters {
  std::atomic<int64_t> connections{0}, unauthenticated{0}, buffer_bytes{0},
      unauthenticated_buffer_bytes{0}, bytes_received{0}, refused_over_cap{0}, hello_timeouts{0},
      frame_timeouts{0}, oversized_hellos{0}, auth_failures{0}, hellos_throttled{0}, hellos_over_budget{0},
      accept_failures{0};
  ServerStats snapshot() const;
};

class Session;

// What a session needs from its server. The server outlives all io activity.
class SessionHost {
 public:
  virtual ~SessionHost() = default;
  virtual ActorService& service() = 0;
  virtual const ServerOptions& options() const = 0;
  virtual const std::shared_ptr<SendGate>& gate() const = 0;
  virtual ServerCounters& counters() = 0;
  virtual AuthThrottle& auth_throttle() = 0;  // also logs the refusals it counts
  virtual void forget(Session* session) = 0;  // the session has closed
  // A session has handled what it read. A pumped server (io_threads 0) keeps
  // it and calls its resume_read() at the start of the next turn, after the
  // service has had its chance to reply, and returns true; otherwise false,
  // and the session reads again at once.
  virtual bool defer_read(Session& session) = 0;
};

class SessionLink final : public ActorLink {
 public:
  SessionLink(std::shared_ptr<SendGate> gate, std::weak_ptr<Session> session, int32_t actor_id);
  void send_actions(ActionBatch&& actions) override;
  void send_config(ConfigUpdate&& update) override;
  void send_bye(const std::string& reason) override;
  void send_reconnect(const std::string& reason) override;
  int32_t actor_id() const override { return actor_id_; }

 private:
  void deliver(Message&& message);

  std::shared_ptr<SendGate> gate_;
  std::weak_ptr<Session> session_;
  int32_t actor_id_;
};

class Session final : public std::enable_shared_from_this<Session> {
 public:
  using Socket = asio::generic::stream_protocol::socket;

  // `socket`'s executor must never run two handlers at once: a strand of its
  // own, or the io_context's executor when one thread runs the io_context.
  // `peer` names the peer in logs; `peer_address` is its IP address for the
  // auth throttle ("" for a Unix socket: not throttled).
  Session(SessionHost& host, Socket socket, std::string peer, std::string peer_address);
  ~Session();

  void post_start();
  // From a SessionLink: an ActionBatch, ConfigUpdate or Bye from the service.
  // Replies made inside on_steps (on this session's strand) are queued at
  // once; everything else is posted. A Bye is always posted, so that
  // on_disconnect never runs inside another service callback.
  void post_from_service(Message&& message);
  // From the pumped server, on its one io thread: the read deferred by
  // SessionHost::defer_read starts now (none if the session has closed).
  void resume_read();
  // From Server::stop(): Bye with `reason`, then close; nothing is logged.
  void post_shutdown(std::string reason);

 private:
  enum class State { kAwaitHello, kActive, kClosing, kClosed };

  void read();
  void on_read(const std::error_code& error, size_t bytes);
  void handle_frame(const uint8_t* data, size_t size);
  void handle_hello(const Hello& hello);
  // Hello refused unchecked: the peer's address is blocked for wrong tokens,
  // or the global budget of failed checks is spent (AuthThrottle::check).
  bool refuse_if_blocked();
  void admitted();  // limits and accounting of an admitted actor

  // Deadlines: the Hello's, and that of a frame whose first bytes arrived.
  void frame_progress(bool frames_taken);  // after a read's frames were taken
  void arm_deadline(std::chrono::steady_clock::time_point when);
  void on_deadline();
  // Adds the read buffer's size change to the server's counters.
  void account_buffer();
  // Takes this connection out of the server's counters (once).
  void release_counts();
  void deliver_from_service(Message& message);

  void enqueue(const Message& message) EXCLUDES(write_mu_);
  void queue_locked(const Message& message) REQUIRES(write_mu_);  // reuses a spare buffer
  void start_write_locked() REQUIRES(write_mu_);
  void on_written(const std::error_code& error) EXCLUDES(write_mu_);
  // Writes now when nothing is pending, else queues in call order. False
  // when the session is not active: the caller takes the strand path.
  bool try_write_now(const Message& message) EXCLUDES(write_mu_);
  void post_start_write();  // asks the strand to write what is queued (with or without write_mu_)
  void allow_direct_writes(bool allow) EXCLUDES(write_mu_);

  // How a connection ends: at once, or with a Bye (that may ask the actor
  // to connect again) and the close grace for the actor to read it.
  enum class CloseWith { kNothing, kBye, kReconnect };
  // A protocol violation: logs one line, then begin_close with a Bye.
  void fail(const std::string& reason);
  // `redirect` (with kReconnect): the address the Bye sends the actor to.
  void begin_close(const std::string& reason, CloseWith with, const std::string& redirect = "");
  void finish_close();

  SessionHost& host_;
  Socket socket_;
  asio::steady_timer close_timer_;
  asio::steady_timer deadline_timer_;
  const std::string peer_;
  const std::string peer_address_;
  State state_ = State::kAwaitHello;
  bool connected_ = false;  // on_connect was called, so on_disconnect is owed
  bool reading_ = false;    // an async read is outstanding
  int32_t actor_id_ = -1;
  std::string close_reason_;
  std::shared_ptr<ActorLink> link_;  // a SessionLink; typed as the service sees it

  FrameReader reader_;
  Message incoming_;  // decode target, reused across frames

  // Deadlines (this session's executor only).
  std::chrono::steady_clock::time_point hello_deadline_;
  std::optional<std::chrono::steady_clock::time_point> frame_started_;  // a partial frame is buffered
  bool deadline_armed_ = false;
  std::chrono::steady_clock::time_point deadline_at_;

  // What this session adds to the server's counters.
  bool counted_ = true;          // in connections (until release_counts)
  bool unauthenticated_ = true;  // in unauthenticated (until admitted or released)
  bool budget_held_ = false;     // the Hello being checked took one of the global budget's checks
  size_t accounted_bytes_ = 0;   // in buffer_bytes

  // Write side: frames wait in queued_, the in-flight write owns writing_,
  // finished frame buffers go back to spare_ so steady state allocates nothing.
  base::Mutex write_mu_;
  std::vector<std::vector<uint8_t>> queued_ GUARDED_BY(write_mu_);
  std::vector<std::vector<uint8_t>> writing_ GUARDED_BY(write_mu_);
  std::vector<std::vector<uint8_t>> spare_ GUARDED_BY(write_mu_);
  std::vector<asio::const_buffer> gather_ GUARDED_BY(write_mu_);
  bool write_in_flight_ GUARDED_BY(write_mu_) = false;
  bool direct_ok_ GUARDED_BY(write_mu_) = false;  // active, socket open
  int direct_fd_ GUARDED_BY(write_mu_) = -1;
  std::vector<uint8_t> direct_frame_ GUARDED_BY(write_mu_);
};

}  // namespace moonseed::rpc::detail
