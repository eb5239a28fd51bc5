#include "dashboard/server.h"

#include <sys/socket.h>
#include <unistd.h>

#include <httplib.h>

#include <cerrno>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <utility>

#include "base/log.h"
#include "base/text.h"
#include "dashboard/connection_queue.h"
#include "dashboard/http_server.h"
#include "dashboard/request_gate.h"
#include "rpc/address.h"
#include "rpc/guards.h"

namespace moonseed::dashboard {
namespace {

rpc::Address parse_listen(const std::string& listen) {
  std::string error;
  const std::optional<rpc::Address> address = rpc::parse_address("tcp:" + listen, &error);
  if (!address || address->kind != rpc::Address::Kind::kTcp) {
    throw std::invalid_argument("dashboard.listen = \"" + listen +
                                "\" is not HOST:PORT (e.g. \"127.0.0.1:0\", \"[::1]:8080\", \"0.0.0.0:8080\")");
  }
  return *address;
}

// httplib's accepting thread hands each new connection to the gate at once.
// The status of the last answer this thread wrote (httplib's logger runs on
// the thread that wrote it, after writing).
thread_local int last_status = 0;

class InlineQueue final : public httplib::TaskQueue {
 public:
  void enqueue(std::function<void()> task) override { task(); }
  void shutdown() override {}
};

// The runs that differ only by their seed, from their config.lua.
std::vector<curves::Group> read_groups(const std::vector<std::string>& run_dirs) {
  std::vector<curves::Run> runs;
  for (const std::string& dir : run_dirs) runs.push_back(curves::read_run_config(dir));
  return curves::group_runs(runs);
}

}  // namespace

rpc::detail::AuthThrottleOptions ServerOptions::auth_defaults() {
  rpc::detail::AuthThrottleOptions out;
  out.subject = "dashboard requests";
  out.log_component = "dashboard";
  return out;
}

ServerOptions ServerOptions::with_hosts(const std::string& hosts) {
  ServerOptions out;
  std::string problem;
  out.hosts = base::parse_host_names(hosts, &problem);
  if (!problem.empty()) throw std::invalid_argument("dashboard.hosts: " + problem);
  return out;
}

bool listen_is_loopback(const std::string& listen) { return rpc::only_this_host(parse_listen(listen)); }

Server::Server(std::vector<std::string> run_dirs, std::string auth_token, ServerOptions options)
    : run_dirs_(std::move(run_dirs)),
      groups_(read_groups(run_dirs_)),
      group_of_(run_dirs_.size()),
      token_(std::move(auth_token)),
      options_(std::move(options)),
      auth_throttle_(std::make_unique<rpc::detail::AuthThrottle>(options_.auth)),
      http_(std::make_unique<HttpServer>()) {
  for (size_t g = 0; g < groups_.size(); ++g) {
    for (const size_t run : groups_[g].runs) group_of_[run] = g;
  }
}

Server::~Server() { stop(); }

void Server::check_listen(const std::string& listen, bool have_token) {
  const rpc::Address address = parse_listen(listen);  // throws for one that is not HOST:PORT
  if (have_token || rpc::only_this_host(address)) return;
  throw std::invalid_argument("dashboard.listen = \"" + listen +
                              "\" reaches beyond this host, and the run has no auth token: give it one "
                              "(--auth-token-file or MOONSEED_AUTH_TOKEN, docs/security.md) or listen on "
                              "127.0.0.1");
}

std::string Server::start(const std::string& listen) {
  check_listen(listen, !token_.empty());
  const rpc::Address address = parse_listen(listen);
  require_token_ = !rpc::only_this_host(address);
  workers_ = std::make_unique<ConnectionQueue>(kThreads, kMaxWaiting);
  RequestGate::Limits limits;
  limits.deadline = std::chrono::seconds(kHeaderDeadlineS);
  limits.max_pending = kMaxPending;
  gate_ = std::make_unique<RequestGate>(limits, [this](RequestGate::Connection&& c) { hand_over(std::move(c)); });
  http_->gate = gate_.get();
  http_->new_task_queue = [] { return new InlineQueue; };
  http_->set_logger([](const httplib::Request&, const httplib::Response& res) { last_status = res.status; });
  http_->set_payload_max_length(4096);  // GET only: no request needs a body
  route();
  int port = address.port;
  if (port == 0) {
    port = http_->bind_to_any_port(address.host);
  } else if (!http_->bind_to_port(address.host, port)) {
    port = -1;
  }
  if (port <= 0) throw std::runtime_error("dashboard: cannot listen on " + listen + ": " + std::strerror(errno));
  http_->widen_backlog(static_cast<int>(kMaxPending));
  thread_ = std::thread([http = http_.get()] { http->listen_after_bind(); });
  const bool v6 = address.host.find(':') != std::string::npos;
  return "http://" + (v6 ? "[" + address.host + "]" : address.host) + ":" + std::to_string(port) + "/";
}

void Server::stop() {
  if (http_) http_->stop();
  if (thread_.joinable()) thread_.join();
  // Then the gate (later connections handed back to it are closed), then the workers.
  if (gate_) gate_->stop();
  if (workers_) workers_->shutdown();
  auth_throttle_->flush_summary(std::chrono::steady_clock::now());
}

void Server::hand_over(RequestGate::Connection&& c) {
  auto connection = std::make_shared<RequestGate::Connection>(std::move(c));
  std::function<void()> task = [this, connection] { serve(*connection); };
  if (workers_->try_enqueue(task)) return;
  const char* busy =
      "HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nRetry-After: 1\r\nContent-Type: text/plain\r\n"
      "Content-Length: 39\r\n\r\n503 busy: the dashboard is busy, retry\n";
  [[maybe_unused]] const ssize_t sent =
      ::send(connection->fd, busy, std::strlen(busy), MSG_DONTWAIT | MSG_NOSIGNAL);
  ::shutdown(connection->fd, SHUT_RDWR);
  ::close(connection->fd);
}

void Server::serve(RequestGate::Connection& c) {
  GateStream stream(c.fd, std::move(c.buffered), c.deadline);
  const bool last = c.served + 1 >= kKeepAliveMax;
  bool closed = false;
  bool ok = false;
  last_status = 0;
  try {
    ok = http_->serve_one(stream, last, closed);
  } catch (const std::exception& e) {
    base::log(base::Severity::kWarning, "dashboard", std::string("a request failed: ") + e.what());
  }
  // A refused or malformed request closes its connection: what follows it may be its rest.
  if (ok && !closed && !last && last_status > 0 && last_status < 400) {
    gate_->add(c.fd, stream.unread(), c.served + 1);  // the next request, under a new deadline
    return;
  }
  ::shutdown(c.fd, SHUT_RDWR);
  ::close(c.fd);
}

void Server::set_status(std::string json) {
  base::MutexLock lock(mu_);
  status_ = std::move(json);
}

std::string Server::status() const {
  base::MutexLock lock(mu_);
  return status_;
}

}  // namespace moonseed::dashboard
