#include "rpc/session.h"

#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <exception>
#include <utility>

#include "base/log.h"
#include "base/text.h"

namespace moonseed::rpc::detail {
namespace {

void log_line(const std::string& peer, int32_t actor_id, const std::string& what) {
  base::log(base::Severity::kWarning, "rpc", peer + " (actor " + std::to_string(actor_id) + "): " + what);
}

// The limits of a connection that has not been admitted: a Hello's worth.
FrameLimits hello_limits(const ServerOptions& options) {
  FrameLimits limits = options.limits;
  limits.max_frame_bytes = std::min(limits.max_frame_bytes, options.max_hello_frame_bytes);
  return limits;
}

constexpr size_t kHelloBufferBytes = 4096;    // a read buffer before admission; grows if needed
constexpr size_t kActiveBufferBytes = 64 << 10;  // what an admitted actor's buffer shrinks back to
// A deadline that passes while bytes wait unread was missed by the learner,
// not the peer: it is checked again this much later.
constexpr std::chrono::milliseconds kRecheck{50};

std::string seconds_text(std::chrono::milliseconds ms) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f s", static_cast<double>(ms.count()) / 1000);
  return text;
}

template <typename T>
void add(std::atomic<T>& counter, T delta) {
  counter.fetch_add(delta, std::memory_order_relaxed);
}

}  // namespace

ServerStats ServerCounters::snapshot() const {
  auto get = [](const std::atomic<int64_t>& a) { return a.load(std::memory_order_relaxed); };
  ServerStats out;
  out.connections = get(connections);
  out.unauthenticated = get(unauthenticated);
  out.buffer_bytes = get(buffer_bytes);
  out.unauthenticated_buffer_bytes = get(unauthenticated_buffer_bytes);
  out.bytes_received = get(bytes_received);
  out.refused_over_cap = get(refused_over_cap);
  out.hello_timeouts = get(hello_timeouts);
  out.frame_timeouts = get(frame_timeouts);
  out.oversized_hellos = get(oversized_hellos);
  out.auth_failures = get(auth_failures);
  out.hellos_throttled = get(hellos_throttled);
  out.hellos_over_budget = get(hellos_over_budget);
  out.accept_failures = get(accept_failures);
  return out;
}

SessionLink::SessionLink(std::shared_ptr<SendGate> gate, std::weak_ptr<Session> session,
                         int32_t actor_id)
    : gate_(std::move(gate)), session_(std::move(session)), actor_id_(actor_id) {}

void SessionLink::send_actions(ActionBatch&& actions) { deliver(Message(std::move(actions))); }

void SessionLink::send_config(ConfigUpdate&& update) { deliver(Message(std::move(update))); }

void SessionLink::send_bye(const std::string& reason) { deliver(Message(Bye{reason, /*reconnect=*/false, /*redirect=*/""})); }

void SessionLink::send_reconnect(const std::string& reason) { deliver(Message(Bye{reason, /*reconnect=*/true, /*redirect=*/""})); }

void SessionLink::deliver(Message&& message) {
  base::ReaderMutexLock lock(gate_->mutex);
  if (!gate_->open) return;
  // The last reference may die here; that must happen while the gate is held,
  // because destroying the socket touches the io_context.
  if (auto session = session_.lock()) session->post_from_service(std::move(message));
}

Session::Session(SessionHost& host, Socket socket, std::string peer, std::string peer_address)
    : host_(host),
      socket_(std::move(socket)),
      close_timer_(socket_.get_executor()),
      deadline_timer_(socket_.get_executor()),
      peer_(std::move(peer)),
      peer_address_(std::move(peer_address)),
      reader_(hello_limits(host.options()), std::min(kHelloBufferBytes, host.options().max_hello_frame_bytes)) {
  ServerCounters& counters = host_.counters();
  add<int64_t>(counters.connections, 1);
  add<int64_t>(counters.unauthenticated, 1);
  account_buffer();
}

Session::~Session() { release_counts(); }

void Session::post_start() {
  asio::post(socket_.get_executor(), [self = shared_from_this()] {
    self->hello_deadline_ = std::chrono::steady_clock::now() + self->host_.options().hello_timeout;
    self->arm_deadline(self->hello_deadline_);
    self->read();
  });
}

void Session::account_buffer() {
  const size_t now_held = counted_ ? reader_.capacity() : 0;
  if (now_held == accounted_bytes_) return;
  const int64_t delta = static_cast<int64_t>(now_held) - static_cast<int64_t>(accounted_bytes_);
  accounted_bytes_ = now_held;
  add(host_.counters().buffer_bytes, delta);
  if (unauthenticated_) add(host_.counters().unauthenticated_buffer_bytes, delta);
}

void Session::release_counts() {
  if (!counted_) return;
  counted_ = false;
  account_buffer();  // to zero
  ServerCounters& counters = host_.counters();
  add<int64_t>(counters.connections, -1);
  if (unauthenticated_) {
    unauthenticated_ = false;
    add<int64_t>(counters.unauthenticated, -1);
  }
}

void Session::admitted() {
  ServerCounters& counters = host_.counters();
  add(counters.unauthenticated_buffer_bytes, -static_cast<int64_t>(accounted_bytes_));
  add<int64_t>(counters.unauthenticated, -1);
  unauthenticated_ = false;
  reader_.set_limits(host_.options().limits, kActiveBufferBytes);
}

void Session::frame_progress(bool frames_taken) {
  if (reader_.buffered() == 0) {
    frame_started_.reset();
    return;
  }
  // A partial frame: it started in this read if a frame ended in it (or none was pending).
  if (frame_started_ && !frames_taken) return;
  frame_started_ = std::chrono::steady_clock::now();
  arm_deadline(*frame_started_ + host_.options().frame_timeout);
}

void Session::arm_deadline(std::chrono::steady_clock::time_point when) {
  // One wait at a time: an earlier one re-arms itself for what is due then.
  if (deadline_armed_ && deadline_at_ <= when) return;
  deadline_armed_ = true;
  deadline_at_ = when;
  deadline_timer_.expires_at(when);  // cancels a later wait, if any
  deadline_timer_.async_wait([self = shared_from_this()](const std::error_code& error) {
    if (!error) self->on_deadline();
  });
}

void Session::on_deadline() {
  deadline_armed_ = false;
  if (state_ != State::kAwaitHello && state_ != State::kActive) return;
  const auto now = std::chrono::steady_clock::now();
  const bool hello_due = state_ == State::kAwaitHello && now >= hello_deadline_;
  const bool frame_due = frame_started_ && now >= *frame_started_ + host_.options().frame_timeout;
  if (hello_due || frame_due) {
    std::error_code error;
    if (socket_.available(error) > 0 && !error) {
      arm_deadline(now + kRecheck);  // bytes wait unread: the delay is ours
      return;
    }
  }
  if (hello_due) {
    add<int64_t>(host_.counters().hello_timeouts, 1);
    fail("no Hello within " + seconds_text(host_.options().hello_timeout));
    return;
  }
  if (frame_due) {
    add<int64_t>(host_.counters().frame_timeouts, 1);
    fail("a frame started " + seconds_text(host_.options().frame_timeout) + " ago is still not whole (" +
         std::to_string(reader_.buffered()) + " bytes of it arrived)");
    return;
  }
  if (state_ == State::kAwaitHello) arm_deadline(hello_deadline_);
  if (frame_started_) arm_deadline(*frame_started_ + host_.options().frame_timeout);
}

void Session::post_from_service(Message&& message) {
  const bool bye = std::holds_alternative<Bye>(message);
  if (!bye && try_write_now(message)) return;
  auto deliver = [self = shared_from_this(), message = std::move(message)]() mutable {
    self->deliver_from_service(message);
  };
  if (bye) {
    asio::post(socket_.get_executor(), std::move(deliver));
  } else {
    asio::dispatch(socket_.get_executor(), std::move(deliver));
  }
}

void Session::post_shutdown(std::string reason) {
  asio::post(socket_.get_executor(),
             [self = shared_from_this(), reason = std::move(reason)] {
               self->begin_close(reason, CloseWith::kBye);
             });
}

void Session::read() {
  reading_ = true;
  socket_.async_read_some(
      asio::buffer(reader_.write_ptr(), reader_.writable()),
      [self = shared_from_this()](const std::error_code& error, size_t bytes) {
        self->on_read(error, bytes);
      });
}

void Session::on_read(const std::error_code& error, size_t bytes) {
  reading_ = false;
  if (state_ == State::kClosed) return;
  if (state_ == State::kClosing) {
    // Lingering close: what the actor still sends is read and dropped until
    // it closes its side (it has our Bye) or the grace timer ends it. Closing
    // with unread data would reset the connection, and a reset can destroy
    // the Bye before the actor reads it.
    if (error) {
      finish_close();
    } else {
      read();
    }
    return;
  }
  if (error) {
    close_reason_ = error == asio::error::eof ? "actor closed the connection"
                                              : "read error: " + error.message();
    finish_close();
    return;
  }
  reader_.commit(bytes);
  add(host_.counters().bytes_received, static_cast<int64_t>(bytes));
  bool frames_taken = false;
  for (;;) {
    FrameReader::Next next = reader_.next();
    if (next.status == FrameReader::Next::Status::kInvalid) {
      if (state_ == State::kAwaitHello) {
        add<int64_t>(host_.counters().oversized_hellos, 1);
        fail("bad frame before Hello (at most " + std::to_string(reader_.limits().max_frame_bytes) +
             " bytes until admitted): " + next.error);
      } else {
        fail("bad frame: " + next.error);
      }
      return;
    }
    if (next.status == FrameReader::Next::Status::kNeedMore) break;
    frames_taken = true;
    handle_frame(next.data, next.size);
    if (state_ == State::kClosing || state_ == State::kClosed) return;
  }
  account_buffer();
  frame_progress(frames_taken);
  reading_ = true;  // outstanding from here on, whether now or at the next turn
  if (!host_.defer_read(*this)) read();
}

void Session::resume_read() {
  if (state_ == State::kClosed) {
    reading_ = false;
    return;
  }
  read();
}

void Session::handle_frame(const uint8_t* data, size_t size) {
  DecodeError error;
  if (!decode_into(data, size, host_.options().limits, incoming_, error)) {
    fail("bad frame: " + error.reason);
    return;
  }
  if (state_ == State::kAwaitHello) {
    if (auto* hello = std::get_if<Hello>(&incoming_)) {
      handle_hello(*hello);
    } else {
      fail(std::string("expected Hello first, got ") + message_name(incoming_));
    }
    return;
  }
  if (auto* batch = std::get_if<StepBatch>(&incoming_)) {
    try {
      host_.service().on_steps(link_, std::move(*batch));
    } catch (const std::exception& e) {
      fail(std::string("service failed on a StepBatch: ") + e.what());
    }
  } else if (auto* notice = std::get_if<ActorNotice>(&incoming_)) {
    try {
      host_.service().on_notice(link_, *notice);
    } catch (const std::exception& e) {
      fail(std::string("service failed on an ActorNotice: ") + e.what());
    }
  } else if (auto* bye = std::get_if<Bye>(&incoming_)) {
    // The actor's words reach the learner's log: no control character of theirs goes with them.
    close_reason_ = "actor said bye: " + base::printable(bye->reason.substr(0, 1000));
    begin_close(close_reason_, CloseWith::kNothing);
  } else {
    fail(std::string("unexpected ") + message_name(incoming_) + " from an actor");
  }
}

void Session::handle_hello(const Hello& hello) {
  actor_id_ = hello.actor_id;
  if (hello.protocol_version != kProtocolVersion) {
    fail("protocol version " + std::to_string(hello.protocol_version) +
         " but this learner speaks " + std::to_string(kProtocolVersion));
    return;
  }
  if (refuse_if_blocked()) return;
  Admission admission;
  try {
    admission = host_.service().on_hello(hello);
  } catch (const std::exception& e) {
    if (budget_held_) host_.auth_throttle().give_back();
    budget_held_ = false;
    fail(std::string("service failed on Hello: ") + e.what());
    return;
  }
  if (!admission.accepted && !admission.redirect.empty()) {
    log_line(peer_, actor_id_, "placed elsewhere: " + admission.reason);
    begin_close(admission.reason, CloseWith::kReconnect, admission.redirect);
    return;
  }
  if (budget_held_ && !admission.bad_credentials) host_.auth_throttle().give_back();
  budget_held_ = false;
  if (!admission.accepted) {
    if (admission.bad_credentials) {
      add<int64_t>(host_.counters().auth_failures, 1);
    }
    if (admission.bad_credentials && !peer_address_.empty()) {
      // Summed up, at most a line per log interval: a guesser cannot fill the log.
      host_.auth_throttle().failed(peer_address_, std::chrono::steady_clock::now());
    } else {
      log_line(peer_, actor_id_, "refused: " + admission.reason);
    }
    begin_close(admission.reason, CloseWith::kBye);
    return;
  }
  if (!peer_address_.empty()) host_.auth_throttle().succeeded(peer_address_);
  admitted();
  actor_id_ = admission.welcome.actor_id;
  link_ = std::make_shared<SessionLink>(host_.gate(), weak_from_this(), actor_id_);
  enqueue(Message(std::move(admission.welcome)));
  state_ = State::kActive;
  allow_direct_writes(true);
  connected_ = true;
  try {
    host_.service().on_connect(link_);
  } catch (const std::exception& e) {
    fail(std::string("service failed on connect: ") + e.what());
  }
}

bool Session::refuse_if_blocked() {
  if (peer_address_.empty()) return false;
  const std::chrono::steady_clock::time_point now = std::chrono::steady_clock::now();
  const AuthCheck check = host_.auth_throttle().check(peer_address_, now);
  budget_held_ = check.from_budget;
  if (check.verdict == AuthCheck::Verdict::kCheck) return false;
  add<int64_t>(host_.counters().hellos_throttled, 1);
  std::string reason;
  if (check.verdict == AuthCheck::Verdict::kAddressBlocked) {
    reason = "too many wrong auth tokens from " + peer_address_ + ": its Hellos are refused unchecked for " +
             seconds_text(check.wait) + " more";
  } else {
    add<int64_t>(host_.counters().hellos_over_budget, 1);
    reason = "too many wrong auth tokens from all addresses together: Hellos from addresses not admitted "
             "before are refused unchecked for " + seconds_text(check.wait) + " more";
  }
  host_.auth_throttle().note_refused(peer_address_, now);
  // Asks the actor to retry: one sharing the address with a guesser, or
  // starting while others guess, gets in once the block ends or the budget
  // refills (its own retries are not failures).
  begin_close(reason, CloseWith::kReconnect);
  return true;
}

void Session::deliver_from_service(Message& message) {
  if (state_ != State::kActive) return;  // the actor is gone or going: drop
  if (auto* bye = std::get_if<Bye>(&message)) {
    begin_close(bye->reason, bye->reconnect ? CloseWith::kReconnect : CloseWith::kBye);
    return;
  }
  enqueue(message);
}

void Session::fail(const std::string& reason) {
  log_line(peer_, actor_id_, "closing connection: " + reason);
  begin_close(reason, CloseWith::kBye);
}

void Session::begin_close(const std::string& reason, CloseWith with, const std::string& redirect) {
  if (state_ == State::kClosing || state_ == State::kClosed) return;
  state_ = State::kClosing;
  allow_direct_writes(false);
  close_reason_ = reason;
  // The lingering close reads into the buffer and drops what it reads: it
  // must have room (a full buffer would make every read complete at once, empty).
  reader_.clear();
  if (with == CloseWith::kNothing) {
    finish_close();
    return;
  }
  enqueue(Message(Bye{reason, with == CloseWith::kReconnect, redirect}));
  // A peer that does not read must not keep the connection open forever.
  close_timer_.expires_after(host_.options().close_grace);
  close_timer_.async_wait([self = shared_from_this()](const std::error_code& error) {
    if (!error) self->finish_close();
  });
}

void Session::finish_close() {
  if (state_ == State::kClosed) return;
  state_ = State::kClosed;
  {
    // No direct write may touch the descriptor once it is closed (and reused).
    base::MutexLock lock(write_mu_);
    direct_ok_ = false;
    direct_fd_ = -1;
    queued_.clear();
  }
  std::error_code ignored;
  socket_.shutdown(asio::socket_base::shutdown_both, ignored);
  socket_.close(ignored);
  close_timer_.cancel();
  deadline_timer_.cancel();
  if (connected_) {
    connected_ = false;
    try {
      host_.service().on_disconnect(link_, close_reason_);
    } catch (const std::exception& e) {
      log_line(peer_, actor_id_, std::string("service failed on disconnect: ") + e.what());
    }
  }
  release_counts();
  host_.forget(this);
}

}  // namespace moonseed::rpc::detail
