// The actor side of the protocol: a blocking client over one Unix or TCP
// socket (TCP_NODELAY).
//
//   auto client = Client::connect("unix:/run/x/learner.sock", 5s);
//   Welcome welcome = client.hello(hello);        // HandshakeRefused on Bye
//   client.send(step_batch);                      // pipelined: send many, then
//   Incoming in = client.receive(100ms);          // ActionBatch | ConfigUpdate | Bye
//                                                 // | Timeout | Closed
// Ownership: the client owns its socket and buffers. Its send buffer, receive
// buffer and decode targets are reused, so steady-state sending and
// receive_into() allocate nothing beyond vector growth.
//
// Failure: connect() makes one attempt, bounded by the timeout, and throws
// ConnectionError (retrying is the caller's policy). hello() throws
// HandshakeRefused with the learner's reason, Redirected for a Bye that sends
// the actor to another rank of a learner group, or ConnectionError (also for a
// Bye that asks to reconnect: the learner is busy, try again later). send() throws
// ConnectionError when the connection is gone; unread_bye() then tells a
// learner that said Bye just before from a lost one. receive() reports timeouts and
// closes as values; a malformed frame from the learner closes the connection
// and comes back as Closed with the reason. Frames above limits.max_frame_bytes
// are never buffered.
//
// Thread-safety: not thread-safe, except that one thread may send() while
// another receives: the socket is only closed by close() (an ended or broken
// connection is shut down, not closed), so the two never race on the
// descriptor. close(), moves and destruction need every other call finished.
#pragma once

#include <atomic>
#include <chrono>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "rpc/address.h"
#include "rpc/codec.h"
#include "rpc/frame_reader.h"
#include "rpc/messages.h"

namespace moonseed::rpc {

class ConnectionError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The learner answered Hello with Bye.
class HandshakeRefused : public ConnectionError {
 public:
  explicit HandshakeRefused(std::string reason);
  const std::string& reason() const { return reason_; }

 private:
  std::string reason_;
};

// The learner, a rank of a learner group, answered a Hello with any_rank by
// placing the actor on another rank: connect to address() instead.
class Redirected : public ConnectionError {
 public:
  Redirected(std::string address, const std::string& reason);
  const std::string& address() const { return address_; }

 private:
  std::string address_;
};

struct Timeout {};
struct Closed {
  std::string reason;
};

using Incoming = std::variant<ActionBatch, ConfigUpdate, Bye, Timeout, Closed>;

struct ClientOptions {
  FrameLimits limits;
};

class Client {
 public:
  static Client connect(const Address& address, std::chrono::milliseconds timeout,
                        const ClientOptions& options = {});
  // Parses the text first (std::invalid_argument when it is not an address).
  static Client connect(std::string_view address, std::chrono::milliseconds timeout,
                        const ClientOptions& options = {});

  Client(Client&& other) noexcept;
  Client& operator=(Client&& other) noexcept;
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;
  ~Client();  // close()

  // Sends Hello and waits for the Welcome.
  Welcome hello(const Hello& hello,
                std::chrono::milliseconds timeout = std::chrono::seconds(30));

  void send(const StepBatch& batch);
  void send(const ActorNotice& notice);

  // Waits up to `timeout` for the next message from the learner.
  Incoming receive(std::chrono::milliseconds timeout);
  // Same, into `into`: when `into` holds the same message type as the one
  // received, their buffers are swapped, so a caller that keeps `into` makes
  // the client reuse its vectors.
  void receive_into(Incoming& into, std::chrono::milliseconds timeout);

  // After a send failed: the Bye the learner sent before the connection broke, if it is among
  // what already arrived, else nullopt. A learner (or a proxy between) that says Bye and closes
  // while this client still sends resets the connection, and the reset fails the send while the
  // Bye waits unread. The kernel keeps the bytes that came before a reset, and they all came
  // before it, so they are read without waiting; other messages among them are dropped.
  std::optional<Bye> unread_bye();

  // Sends Bye{reason} if the socket is still open (best effort, never blocks),
  // then closes. Idempotent.
  void close(const std::string& reason = "actor closing");
  // False after close(), or once receive() has seen the connection end.
  bool is_open() const { return fd_ >= 0 && !ended_; }

 private:
  enum class Got { kMessage, kTimeout, kClosed };

  Client(int fd, const ClientOptions& options);
  // Reads until one frame is decoded into incoming_, `timeout` passes or the
  // connection ends (closed_reason_ says why).
  Got next_message(std::chrono::milliseconds timeout);
  void write_frame();
  // Receive side: the stream is over (EOF, error or bad frame).
  void end(const std::string& reason);

  int fd_ = -1;
  std::atomic<bool> ended_{false};  // set by the receiving thread
  FrameLimits limits_;
  std::vector<uint8_t> out_;  // encoded outgoing frame, reused
  FrameReader reader_;
  Message incoming_;  // decode target, reused
  std::string closed_reason_;
};

}  // namespace moonseed::rpc
