#include "rpc/server.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <asio.hpp>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <system_error>
#include <thread>
#include <unordered_map>

#include "base/thread_name.h"
#include "base/log.h"
#include "base/mutex.h"
#include "rpc/session.h"
#include "rpc/unix_socket.h"

namespace moonseed::rpc {
namespace {

using UnixAcceptor = asio::local::stream_protocol::acceptor;
using TcpAcceptor = asio::ip::tcp::acceptor;

// The peer's name for logs ("tcp:1.2.3.4:5678") and its IP address ("1.2.3.4").
template <typename TcpSocket>
std::pair<std::string, std::string> tcp_peer(const TcpSocket& socket) {
  std::error_code error;
  const auto endpoint = socket.remote_endpoint(error);
  if (error) return {"tcp:?", "?"};
  Address address;
  address.kind = Address::Kind::kTcp;
  address.host = endpoint.address().to_string();
  address.port = endpoint.port();
  return {address.to_string(), address.host};
}

// accept() failing for want of a resource that closing connections frees:
// trying again at once would fail again at once.
bool out_of_resources(const std::error_code& error) {
  const int code = error.value();
  return error.category() == asio::error::get_system_category() &&
         (code == EMFILE || code == ENFILE || code == ENOBUFS || code == ENOMEM);
}

// One listening socket and its accept loop's state (the accept strand only).
template <typename Acceptor>
struct Listener {
  template <typename Executor>
  Listener(const Executor& executor, std::string name)
      : acceptor(executor), retry(executor), name(std::move(name)) {}
  Acceptor acceptor;
  asio::steady_timer retry;  // waits out a backoff
  const std::string name;    // "unix:PATH" or "tcp"
  std::chrono::milliseconds backoff{0};
  int64_t failures = 0;  // since the last "works again" line
  // A failure line was printed since the last "works again" line: only then
  // is the recovery worth a line, so a listener that flaps between failing
  // and accepting logs at most two lines per log interval.
  bool failure_logged = false;
};

std::string unix_peer(const std::string& path, int fd) {
  ucred credentials{};
  socklen_t length = sizeof credentials;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) == 0) {
    return "unix:" + path + " pid " + std::to_string(credentials.pid);
  }
  return "unix:" + path;
}

detail::AuthThrottleOptions auth_throttle_options(const ServerOptions& options) {
  detail::AuthThrottleOptions out{options.auth_free_failures, options.auth_block_first, options.auth_block_max,
                                  options.auth_forget_after, options.auth_tracked_peers};
  out.max_trusted = options.auth_tracked_peers;
  out.budget_per_s = options.auth_budget_per_s;
  out.budget_burst = options.auth_budget_burst;
  out.summary_interval = options.log_interval;
  return out;
}

}  // namespace

class Server::Impl final : public detail::SessionHost {
 public:
  Impl(ActorService& service, ServerOptions options)
      : service_(service),
        options_(std::move(options)),
        auth_throttle_(auth_throttle_options(options_)),
        accept_log_(base::Severity::kWarning, options_.log_interval),
        over_cap_log_(base::Severity::kWarning, options_.log_interval),
        work_(io_.get_executor()),
        accept_strand_(asio::make_strand(io_)),
        gate_(std::make_shared<detail::SendGate>()) {
    if (options_.io_threads < 0) {
      throw std::invalid_argument("ServerOptions.io_threads must be >= 0, got " +
                                  std::to_string(options_.io_threads));
    }
  }

  ~Impl() override { stop(); }

  ActorService& service() override { return service_; }
  const ServerOptions& options() const override { return options_; }
  const std::shared_ptr<detail::SendGate>& gate() const override { return gate_; }
  detail::ServerCounters& counters() override { return counters_; }
  detail::AuthThrottle& auth_throttle() override { return auth_throttle_; }
  ServerStats stats() const { return counters_.snapshot(); }

  bool defer_read(detail::Session& session) override {
    if (options_.io_threads != 0) return false;
    // No io thread: this runs in a handler that run_for() or stop() runs
    // holding run_mu_, out of the analysis' sight.
    run_mu_.assert_held();
    deferred_reads_.push_back(session.shared_from_this());
    return true;
  }

  void forget(detail::Session* session) override EXCLUDES(sessions_mutex_) {
    base::MutexLock lock(sessions_mutex_);
    sessions_.erase(session);
  }

  Address listen(const Address& address) {
    if (stop_requested_) throw std::logic_error("Server::listen after stop()");
    try {
      return address.kind == Address::Kind::kUnix ? listen_unix(address) : listen_tcp(address);
    } catch (const std::system_error& e) {
      throw std::system_error(e.code(), "cannot listen on " + address.to_string());
    }
  }

  void start() {
    if (started_) throw std::logic_error("Server::start called twice");
    if (stop_requested_) throw std::logic_error("Server::start after stop()");
    started_ = true;
    for (int i = 0; i < options_.io_threads; ++i) {
      threads_.emplace_back([this] {
        base::set_thread_name("ms-io");
        run_io();
      });
    }
  }

  void run_for(std::chrono::nanoseconds max_wait) EXCLUDES(run_mu_) {
    if (io_.stopped()) {
      // Shut down: nothing will ever be ready. Wait like a pump would.
      std::this_thread::sleep_for(max_wait);
      return;
    }
    try {
      // One handler per call: the caller checks its batch after each, and a
      // poll() for more would cost an epoll_wait per step.
      base::MutexLock one_runner(run_mu_);
      resume_deferred_reads();
      io_.run_one_for(max_wait);
    } catch (const std::exception& e) {
      base::log(base::Severity::kError, "rpc", std::string("io pump caught: ") + e.what());
    }
  }

  void wake() { asio::post(io_, [] {}); }

  void stop() EXCLUDES(run_mu_, sessions_mutex_) {
    if (stop_requested_.exchange(true)) return;
    {
      base::WriterMutexLock lock(gate_->mutex);
      gate_->open = false;
    }
    asio::post(accept_strand_, [this] { shut_everything(); });
    work_.reset();
    if (threads_.empty()) {
      // No io thread: run the shutdown handlers here, taking turns with a
      // pump that may still be running (sessions have no strands then).
      while (!io_.stopped()) {
        base::MutexLock one_runner(run_mu_);
        try {
          resume_deferred_reads();
          io_.run_one_for(std::chrono::milliseconds(20));
        } catch (const std::exception& e) {
          base::log(base::Severity::kError, "rpc", std::string("io caught: ") + e.what());
        }
      }
      base::MutexLock one_runner(run_mu_);
      deferred_reads_.clear();  // closed sessions: nothing will run them again
    }
    for (auto& thread : threads_) thread.join();
    threads_.clear();
    for (const auto& path : unix_paths_) ::unlink(path.c_str());
    unix_paths_.clear();
    auth_throttle_.flush_summary(std::chrono::steady_clock::now());
  }

 private:
  // resume_read() only starts a read (asio never completes one inside the
  // call that starts it), so no session is deferred meanwhile.
  void resume_deferred_reads() REQUIRES(run_mu_) {
    for (auto& session : deferred_reads_) session->resume_read();
    deferred_reads_.clear();
  }

  void run_io() {
    for (;;) {
      try {
        io_.run();
        return;
      } catch (const std::exception& e) {
        base::log(base::Severity::kError, "rpc", std::string("io thread caught: ") + e.what());
      }
    }
  }

  Address listen_unix(const Address& address) {
    const std::string& path = address.path;
    remove_stale_unix_socket(path);  // left by a learner that died
    auto listener = std::make_unique<Listener<UnixAcceptor>>(accept_strand_, "unix:" + path);
    UnixAcceptor* acceptor = &listener->acceptor;
    acceptor->open();
    acceptor->bind(asio::local::stream_protocol::endpoint(path));
    unix_paths_.push_back(path);
    // Before listen(): nobody can connect while the mode is still the umask's.
    if (::chmod(path.c_str(), 0600) != 0) {
      throw std::system_error(errno, std::generic_category(), "chmod 0600 " + path);
    }
    acceptor->listen(asio::socket_base::max_listen_connections);
    Listener<UnixAcceptor>& ref = *listener;
    unix_listeners_.push_back(std::move(listener));
    accept(ref, [this, path](auto socket) {
      std::string peer = unix_peer(path, socket.native_handle());
      adopt(detail::Session::Socket(std::move(socket)), std::move(peer), "");
    });
    return address;
  }

  Address listen_tcp(const Address& address) {
    asio::ip::tcp::resolver resolver(io_);
    auto endpoints = resolver.resolve(address.host, std::to_string(address.port),
                                      asio::ip::resolver_base::passive |
                                          asio::ip::resolver_base::numeric_service);
    const asio::ip::tcp::endpoint endpoint = *endpoints.begin();
    auto listener = std::make_unique<Listener<TcpAcceptor>>(accept_strand_, "tcp");
    TcpAcceptor* acceptor = &listener->acceptor;
    acceptor->open(endpoint.protocol());
    acceptor->set_option(asio::socket_base::reuse_address(true));
    acceptor->bind(endpoint);
    acceptor->listen(asio::socket_base::max_listen_connections);
    const auto bound = acceptor->local_endpoint();
    Listener<TcpAcceptor>& ref = *listener;
    tcp_listeners_.push_back(std::move(listener));
    accept(ref, [this](auto socket) {
      std::error_code ignored;
      // Replies are small and latency-bound: never wait for Nagle.
      socket.set_option(asio::ip::tcp::no_delay(true), ignored);
      auto [peer, peer_address] = tcp_peer(socket);
      adopt(detail::Session::Socket(std::move(socket)), std::move(peer), std::move(peer_address));
    });
    Address out;
    out.kind = Address::Kind::kTcp;
    out.host = bound.address().to_string();
    out.port = bound.port();
    return out;
  }

  // A session's handlers must never run concurrently. With one thread
  // running the io_context (io_threads 0: the pump; 1: the io thread) they
  // cannot, and the io_context's own executor spares every handler the
  // strand's bookkeeping; with more, each session gets a strand.
  asio::any_io_executor session_executor() {
    if (options_.io_threads <= 1) return io_.get_executor();
    return asio::make_strand(io_);
  }

  // Accepts connections on `listener` for good, handing each socket to
  // `adopt_socket`. When accept fails for want of descriptors or memory it
  // waits (10 ms doubling to 1 s by default) instead of spinning on the
  // pending connection, and failures are logged once per log_interval.
  template <typename Acceptor, typename Adopt>
  void accept(Listener<Acceptor>& listener, Adopt adopt_socket) {
    listener.acceptor.async_accept(
        session_executor(), [this, &listener, adopt_socket](const std::error_code& error, auto socket) {
          if (error == asio::error::operation_aborted || !listener.acceptor.is_open()) return;
          if (error) {
            counters_.accept_failures.fetch_add(1, std::memory_order_relaxed);
            ++listener.failures;
            if (out_of_resources(error)) {
              listener.backoff = listener.backoff.count() == 0
                                     ? options_.accept_backoff_first
                                     : std::min(2 * listener.backoff, options_.accept_backoff_max);
              if (accept_log_.note("accept on " + listener.name + " failed: " + error.message() +
                                   "; retrying every " + std::to_string(listener.backoff.count()) +
                                   " ms at most")) {
                listener.failure_logged = true;
              }
              listener.retry.expires_after(listener.backoff);
              listener.retry.async_wait([this, &listener, adopt_socket](const std::error_code& waited) {
                if (!waited && listener.acceptor.is_open()) accept(listener, adopt_socket);
              });
              return;
            }
            if (accept_log_.note("accept on " + listener.name + " failed: " + error.message())) {
              listener.failure_logged = true;
            }
          } else {
            if (listener.failure_logged) {
              base::log(base::Severity::kInfo, "rpc",
                        "accept on " + listener.name + " works again after " +
                            std::to_string(listener.failures) + " failures");
              listener.failures = 0;
              listener.failure_logged = false;
            }
            listener.backoff = std::chrono::milliseconds(0);
            adopt_socket(std::move(socket));
          }
          accept(listener, adopt_socket);
        });
  }

  void adopt(detail::Session::Socket socket, std::string peer, std::string peer_address)
      EXCLUDES(sessions_mutex_) {
    if (options_.max_unauthenticated > 0 &&
        counters_.unauthenticated.load(std::memory_order_relaxed) >= options_.max_unauthenticated) {
      refuse_over_cap(socket, peer);
      return;  // the socket closes here
    }
    auto session = std::make_shared<detail::Session>(*this, std::move(socket), std::move(peer),
                                                     std::move(peer_address));
    {
      // Registered under the same lock that shut_everything() closes the
      // registry with, so no session can slip past a stop().
      base::MutexLock lock(sessions_mutex_);
      if (registry_closed_) return;  // the socket closes with `session`
      sessions_.emplace(session.get(), session);
    }
    session->post_start();
  }

  // Too many connections wait to say Hello: this one gets a Bye that asks it
  // to retry, written without waiting (best effort: a new socket's buffer has
  // room), and is closed.
  void refuse_over_cap(detail::Session::Socket& socket, const std::string& peer) {
    counters_.refused_over_cap.fetch_add(1, std::memory_order_relaxed);
    const std::string reason = "the learner has " + std::to_string(options_.max_unauthenticated) +
                               " connections waiting to say Hello; try again later";
    const std::vector<uint8_t> frame = encode(Bye{reason, /*reconnect=*/true, /*redirect=*/""});
    [[maybe_unused]] const ssize_t sent =
        ::send(socket.native_handle(), frame.data(), frame.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
    over_cap_log_.note(peer + ": refused: " + reason);
    std::error_code ignored;
    socket.shutdown(asio::socket_base::shutdown_both, ignored);
    socket.close(ignored);
  }

  void shut_everything() EXCLUDES(sessions_mutex_) {
    std::error_code ignored;
    for (auto& listener : unix_listeners_) {
      listener->acceptor.close(ignored);
      listener->retry.cancel();
    }
    for (auto& listener : tcp_listeners_) {
      listener->acceptor.close(ignored);
      listener->retry.cancel();
    }
    std::vector<std::shared_ptr<detail::Session>> live;
    {
      base::MutexLock lock(sessions_mutex_);
      registry_closed_ = true;
      for (auto& entry : sessions_) {
        if (auto session = entry.second.lock()) live.push_back(std::move(session));
      }
    }
    for (auto& session : live) session->post_shutdown("learner stopping");
  }

  ActorService& service_;
  const ServerOptions options_;
  // Before io_: sessions that die with the io_context still count out.
  detail::ServerCounters counters_;
  detail::AuthThrottle auth_throttle_;
  detail::LogThrottle accept_log_;
  detail::LogThrottle over_cap_log_;
  asio::io_context io_;  // declared before every io object, so destroyed after them
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work_;
  // Accept handlers and shut_everything() run here, so closing an acceptor
  // never races with its accept handler when there are several io threads.
  asio::strand<asio::io_context::executor_type> accept_strand_;
  std::shared_ptr<detail::SendGate> gate_;
  std::vector<std::unique_ptr<Listener<UnixAcceptor>>> unix_listeners_;
  std::vector<std::unique_ptr<Listener<TcpAcceptor>>> tcp_listeners_;
  std::vector<std::string> unix_paths_;  // socket files to remove at stop()
  std::vector<std::thread> threads_;
  // With io_threads == 0, whoever runs handlers (the pump, or stop()) holds
  // this: one thread at a time, as the sessions' executor requires. Handlers
  // run under it take the locks of session.h's lock order after it.
  base::Mutex run_mu_ ACQUIRED_BEFORE(sessions_mutex_);
  // Sessions whose next read waits for the pump's next turn (io_threads 0).
  std::vector<std::shared_ptr<detail::Session>> deferred_reads_ GUARDED_BY(run_mu_);
  bool started_ = false;  // owner thread only
  std::atomic<bool> stop_requested_{false};

  base::Mutex sessions_mutex_;
  bool registry_closed_ GUARDED_BY(sessions_mutex_) = false;
  std::unordered_map<detail::Session*, std::weak_ptr<detail::Session>> sessions_ GUARDED_BY(sessions_mutex_);
};

Server::Server(ActorService& service, ServerOptions options)
    : impl_(std::make_unique<Impl>(service, std::move(options))) {}

Server::~Server() = default;

Address Server::listen(const Address& address) { return impl_->listen(address); }

Address Server::listen(std::string_view address) { return impl_->listen(require_address(address)); }

void Server::start() { impl_->start(); }

void Server::stop() { impl_->stop(); }

void Server::run_for(std::chrono::nanoseconds max_wait) { impl_->run_for(max_wait); }

void Server::wake() { impl_->wake(); }

ServerStats Server::stats() const { return impl_->stats(); }

}  // namespace moonseed::rpc
