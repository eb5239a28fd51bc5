#include "dashboard/server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <httplib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <utility>

#include "base/log.h"
#include "base/secret.h"
#include "base/text.h"
#include "dashboard/assets.h"
#include "dashboard/connection_queue.h"
#include "dashboard/request_gate.h"
#include "rpc/address.h"
#include "rpc/guards.h"

namespace moonseed::dashboard {
namespace {

constexpr const char* kCookie = "moonseed_token";

const char* content_type(const std::string& name) {
  const auto ends_with = [&](const char* ext) {
    const size_t n = std::strlen(ext);
    return name.size() >= n && name.compare(name.size() - n, n, ext) == 0;
  };
  if (ends_with(".html")) return "text/html; charset=utf-8";
  if (ends_with(".js")) return "text/javascript; charset=utf-8";
  if (ends_with(".css")) return "text/css; charset=utf-8";
  return "application/octet-stream";
}

rpc::Address parse_listen(const std::string& listen) {
  std::string error;
  const std::optional<rpc::Address> address = rpc::parse_address("tcp:" + listen, &error);
  if (!address || address->kind != rpc::Address::Kind::kTcp) {
    throw std::invalid_argument("dashboard.listen = \"" + listen +
                                "\" is not HOST:PORT (e.g. \"127.0.0.1:0\", \"[::1]:8080\", \"0.0.0.0:8080\")");
  }
  return *address;
}

// Up to `max_bytes` of `path` from byte `from`; "" past its end. Sets `size` to the file's size.
std::string read_part(const std::string& path, size_t from, size_t max_bytes, size_t& size) {
  size = 0;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "";
  struct stat st {};
  std::string out;
  if (::fstat(fd, &st) == 0 && static_cast<size_t>(st.st_size) > from) {
    size = static_cast<size_t>(st.st_size);
    out.resize(std::min(max_bytes, size - from));
    size_t got = 0;
    while (got < out.size()) {
      const ssize_t n = ::pread(fd, out.data() + got, out.size() - got, static_cast<off_t>(from + got));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      got += static_cast<size_t>(n);
    }
    out.resize(got);
  } else if (::fstat(fd, &st) == 0) {
    size = static_cast<size_t>(st.st_size);
  }
  ::close(fd);
  return out;
}

// A request parameter as a non-negative integer no larger than `max`; false when absent or not one.
bool param_index(const httplib::Request& req, const char* name, size_t max, size_t& out) {
  if (!req.has_param(name)) return false;
  const std::string text = req.get_param_value(name);
  if (text.empty() || text.size() > 18) return false;
  size_t value = 0;
  for (const char c : text) {
    if (c < '0' || c > '9') return false;
    value = value * 10 + static_cast<size_t>(c - '0');
  }
  if (value > max) return false;
  out = value;
  return true;
}

void bad_request(httplib::Response& res, const std::string& why) {
  res.status = 400;
  res.set_content("400 bad request: " + why + "\n", "text/plain; charset=utf-8");
}

// The token a request carries: ?token=, "Authorization: Bearer", or the cookie.
std::string given_token(const httplib::Request& req) {
  if (req.has_param("token")) return req.get_param_value("token");
  const std::string auth = req.get_header_value("Authorization");
  if (auth.rfind("Bearer ", 0) == 0) return auth.substr(7);
  const std::string cookies = req.get_header_value("Cookie");
  const std::string key = std::string(kCookie) + "=";
  size_t at = 0;
  while (at < cookies.size()) {
    while (at < cookies.size() && (cookies[at] == ' ' || cookies[at] == ';')) ++at;
    const size_t end = std::min(cookies.find(';', at), cookies.size());
    if (cookies.compare(at, key.size(), key) == 0) return cookies.substr(at + key.size(), end - at - key.size());
    at = end;
  }
  return "";
}

// The Host header names this host: `localhost`, a literal IPv4 loopback
// address (127.a.b.c, four decimal parts), [::1], or one of `names` (the
// configured dashboard.hosts, any case), then nothing or :PORT. A name that
// only starts like one (127.attacker.example) is another host's: a page of
// that name could reach this dashboard through DNS rebinding.
bool host_header_names_this_host(const std::string& host_header, const std::vector<std::string>& names) {
  std::string host = host_header, port;
  if (!host.empty() && host[0] == '[') {
    const size_t close = host.find(']');
    if (close == std::string::npos) return false;
    port = host.substr(close + 1);
    host = host.substr(0, close + 1);
  } else if (const size_t colon = host.find(':'); colon != std::string::npos) {
    port = host.substr(colon);
    host = host.substr(0, colon);
  }
  if (!port.empty()) {
    const bool digits = port.size() >= 2 && port.size() <= 6 && port[0] == ':' &&
                        std::all_of(port.begin() + 1, port.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (!digits) return false;
  }
  if (host == "localhost" || host == "[::1]") return true;
  const auto same = [&](const std::string& name) {
    return name.size() == host.size() && std::equal(name.begin(), name.end(), host.begin(), [](char a, char b) {
             return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
           });
  };
  if (std::any_of(names.begin(), names.end(), same)) return true;
  in_addr address{};
  return ::inet_pton(AF_INET, host.c_str(), &address) == 1 && (ntohl(address.s_addr) >> 24) == 127;
}

// httplib reads a request through this: first the bytes the gate read
// (RequestGate), then the socket, only until the request's deadline; each
// write waits at most Server::kReadTimeoutS for room.
class GateStream final : public httplib::Stream {
 public:
  GateStream(int fd, std::string buffered, RequestGate::Clock::time_point read_deadline)
      : fd_(fd), buffered_(std::move(buffered)), read_deadline_(read_deadline) {}

  bool is_readable() const override { return at_ < buffered_.size() || wait(POLLIN, read_deadline_); }
  bool is_writable() const override { return wait(POLLOUT, write_deadline()); }
  ssize_t read(char* ptr, size_t size) override {
    if (at_ < buffered_.size()) {
      const size_t n = std::min(size, buffered_.size() - at_);
      std::memcpy(ptr, buffered_.data() + at_, n);
      at_ += n;
      return static_cast<ssize_t>(n);
    }
    if (!wait(POLLIN, read_deadline_)) return -1;
    ssize_t n;
    do n = ::recv(fd_, ptr, size, MSG_DONTWAIT);
    while (n < 0 && errno == EINTR);
    return n;
  }
  ssize_t write(const char* ptr, size_t size) override {
    if (!wait(POLLOUT, write_deadline())) return -1;
    ssize_t n;
    do n = ::send(fd_, ptr, size, MSG_DONTWAIT | MSG_NOSIGNAL);
    while (n < 0 && errno == EINTR);
    return n;
  }
  void get_remote_ip_and_port(std::string& ip, int& port) const override { address_of(::getpeername, ip, port); }
  void get_local_ip_and_port(std::string& ip, int& port) const override { address_of(::getsockname, ip, port); }
  int socket() const override { return fd_; }
  // Bytes the gate read past this request (a client that sent the next one already).
  std::string unread() const { return buffered_.substr(at_); }

 private:
  static RequestGate::Clock::time_point write_deadline() {
    return RequestGate::Clock::now() + std::chrono::seconds(Server::kReadTimeoutS);
  }
  bool wait(short events, RequestGate::Clock::time_point deadline) const {
    while (true) {
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - RequestGate::Clock::now());
      pollfd p{fd_, events, 0};
      const int n = ::poll(&p, 1, static_cast<int>(std::max<int64_t>(0, left.count())));
      if (n > 0) return true;
      if (n == 0 || errno != EINTR) return false;
    }
  }
  void address_of(int (*name)(int, sockaddr*, socklen_t*), std::string& ip, int& port) const {
    sockaddr_storage address{};
    socklen_t length = sizeof address;
    ip.clear();
    port = 0;
    if (name(fd_, reinterpret_cast<sockaddr*>(&address), &length) != 0) return;
    char text[INET6_ADDRSTRLEN] = {};
    if (address.ss_family == AF_INET) {
      const auto* v4 = reinterpret_cast<const sockaddr_in*>(&address);
      ::inet_ntop(AF_INET, &v4->sin_addr, text, sizeof text);
      port = ntohs(v4->sin_port);
    } else if (address.ss_family == AF_INET6) {
      const auto* v6 = reinterpret_cast<const sockaddr_in6*>(&address);
      ::inet_ntop(AF_INET6, &v6->sin6_addr, text, sizeof text);
      port = ntohs(v6->sin6_port);
    }
    ip = text;
  }

  const int fd_;
  const std::string buffered_;
  size_t at_ = 0;
  const RequestGate::Clock::time_point read_deadline_;
};

// httplib's accepting thread hands each new connection to the gate at once.
// The status of the last answer this thread wrote (httplib's logger runs on
// the thread that wrote it, after writing).
thread_local int last_status = 0;

class InlineQueue final : public httplib::TaskQueue {
 public:
  void enqueue(std::function<void()> task) override { task(); }
  void shutdown() override {}
};

std::string run_name(const std::string& dir) {
  std::string d = dir;
  while (d.size() > 1 && d.back() == '/') d.pop_back();
  const size_t slash = d.rfind('/');
  return slash == std::string::npos ? d : d.substr(slash + 1);
}

// "[1, 2.5, ...]": numbers that read back exactly.
std::string json_numbers(const std::vector<double>& values) {
  std::string out = "[";
  for (size_t i = 0; i < values.size(); ++i) out += (i ? ", " : "") + base::number_text(values[i]);
  return out + "]";
}

// The JSON object lines of `chunk` (whole lines) as a JSON list's items, and
// for each whether it is a point (curves::is_point). A line that is not one
// whole JSON object (a file edited or damaged by hand) is left out of both, so
// the reply stays valid JSON.
struct RowsReply {
  std::string rows;    // "row,\nrow"
  std::string points;  // "[true, false]"
};
RowsReply rows_of(const std::string& chunk) {
  RowsReply out;
  out.points = "[";
  for (size_t at = 0; at < chunk.size();) {
    const size_t end = chunk.find('\n', at);
    const std::string_view line = std::string_view(chunk).substr(at, end - at);
    at = end + 1;
    const std::optional<curves::MetricsRow> row = curves::parse_metrics_row(line);
    if (!row) continue;
    const bool first = out.points.size() == 1;
    out.rows.append(first ? "" : ",\n").append(line);
    out.points += std::string(first ? "" : ", ") + (curves::is_point(*row) ? "true" : "false");
  }
  out.points += "]";
  return out;
}

// The runs that differ only by their seed, from their config.lua.
std::vector<curves::Group> read_groups(const std::vector<std::string>& run_dirs) {
  std::vector<curves::Run> runs;
  for (const std::string& dir : run_dirs) runs.push_back(curves::read_run_config(dir));
  return curves::group_runs(runs);
}

}  // namespace

// httplib's server, fed by the gate: an accepted connection goes to the gate
// (not to a thread of httplib's), and serve_one() answers one request.
class HttpServer final : public httplib::Server {
 public:
  RequestGate* gate = nullptr;  // set before listening

  // httplib 0.11 listens with a backlog of 5: a burst of connections (slow
  // ones among them) would make a real one's SYN wait for retransmission, for
  // seconds. Linux takes a second listen() as a new backlog.
  void widen_backlog(int backlog) { ::listen(svr_sock_, backlog); }

  // One request from `stream`; false when the connection must close.
  bool serve_one(GateStream& stream, bool last, bool& connection_closed) {
    return process_request(stream, last, connection_closed, nullptr);
  }

 private:
  bool process_and_close_socket(int sock) override {
    gate->add(sock);
    return true;
  }
};

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

void Server::route() {
  using httplib::Request;
  using httplib::Response;
  http_->set_pre_routing_handler([this](const Request& req, Response& res) {
    if (!require_token_) {
      if (host_header_names_this_host(req.get_header_value("Host"), options_.hosts)) {
        return httplib::Server::HandlerResponse::Unhandled;
      }
      res.status = 403;
      res.set_content("403 forbidden: this dashboard answers only requests addressed to this host (its loopback "
                      "addresses, localhost, or a name in dashboard.hosts)\n",
                      "text/plain");
      return httplib::Server::HandlerResponse::Handled;
    }
    const std::string given = given_token(req);
    const auto unauthorized = [&] {
      res.status = 401;
      res.set_content("401 unauthorized: open the dashboard with ?token=THE_RUN'S_AUTH_TOKEN\n", "text/plain");
      return httplib::Server::HandlerResponse::Handled;
    };
    if (given.empty()) return unauthorized();  // no guess: nothing to count
    const auto now = std::chrono::steady_clock::now();
    const rpc::detail::AuthCheck check = auth_throttle_->check(req.remote_addr, now);
    if (check.verdict != rpc::detail::AuthCheck::Verdict::kCheck) {
      auth_throttle_->note_refused(req.remote_addr, now);
      const int64_t seconds = std::max<int64_t>(1, (check.wait.count() + 999) / 1000);
      res.status = 429;
      res.set_header("Retry-After", std::to_string(seconds));
      res.set_content("429 too many requests: too many wrong tokens; try again in " + std::to_string(seconds) +
                          " s\n",
                      "text/plain");
      return httplib::Server::HandlerResponse::Handled;
    }
    if (!base::secret_matches(token_, given)) {
      auth_throttle_->failed(req.remote_addr, now);
      return unauthorized();
    }
    if (check.from_budget) auth_throttle_->give_back();
    auth_throttle_->succeeded(req.remote_addr);
    if (req.has_param("token")) {
      res.set_header("Set-Cookie", std::string(kCookie) + "=" + given + "; Path=/; HttpOnly; SameSite=Strict");
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });
  http_->set_exception_handler([](const Request&, Response& res, std::exception_ptr) {
    res.status = 500;
    res.set_content("500 internal error\n", "text/plain");
  });
  http_->Get(R"(/([A-Za-z0-9_.-]*))", [](const Request& req, Response& res) {
    const std::string name = req.matches[1].str().empty() ? "index.html" : req.matches[1].str();
    for (const Asset& a : assets()) {
      if (name == a.name) {
        res.set_content(reinterpret_cast<const char*>(a.data), a.size, content_type(name));
        return;
      }
    }
    res.status = 404;
    res.set_content("404 not found\n", "text/plain");
  });
  http_->Get("/api/runs", [this](const Request&, Response& res) {
    std::string out = "[";
    for (size_t i = 0; i < run_dirs_.size(); ++i) {
      out += (i ? ", " : "") + std::string("{\"run\": ") + std::to_string(i) +
             ", \"name\": " + base::json_quote(run_name(run_dirs_[i])) + ", \"group\": " +
             std::to_string(group_of_[i]) + ", \"group_label\": " + base::json_quote(groups_[group_of_[i]].label) +
             "}";
    }
    res.set_content(out + "]", "application/json");
  });
  http_->Get("/api/rows", [this](const Request& req, Response& res) {
    size_t run = 0;
    size_t from = 0;
    if (!param_index(req, "run", run_dirs_.empty() ? 0 : run_dirs_.size() - 1, run) || run_dirs_.empty()) {
      return bad_request(res, "run= must be the index of a run (GET /api/runs)");
    }
    if (!param_index(req, "from", SIZE_MAX / 2, from)) return bad_request(res, "from= must be a byte offset");
    size_t size = 0;
    std::string chunk = read_part(run_dirs_[run] + "/metrics.jsonl", from, kMaxChunkBytes, size);
    // Whole lines only; a line longer than a whole chunk is skipped.
    const size_t last = chunk.rfind('\n');
    size_t next = from;
    if (last != std::string::npos) {
      chunk.resize(last + 1);
      next = from + chunk.size();
    } else {
      if (chunk.size() == kMaxChunkBytes) next = from + chunk.size();
      chunk.clear();
    }
    const RowsReply reply = rows_of(chunk);
    res.set_content("{\"from\": " + std::to_string(from) + ", \"next\": " + std::to_string(next) +
                        ", \"size\": " + std::to_string(size) + ", \"rows\": [" + reply.rows +
                        "], \"points\": " + reply.points + "}",
                    "application/json");
  });
  http_->Get("/api/band", [this](const Request& req, Response& res) {
    size_t group = 0;
    if (groups_.empty() || !param_index(req, "group", groups_.size() - 1, group)) {
      return bad_request(res, "group= must be the index of a group (GET /api/runs)");
    }
    const std::string metric = req.get_param_value("metric");
    if (metric.empty() || metric.size() > kMaxMetricName) return bad_request(res, "metric= must name a metric");
    const std::string x = req.has_param("x") ? req.get_param_value("x") : "frames";
    if (x != "frames" && x != "time_s") return bad_request(res, "x= must be frames or time_s");
    const curves::XAxis axis = x == "frames" ? curves::XAxis::kFrames : curves::XAxis::kTime;
    // Read now: a run of the group may still be writing.
    std::vector<size_t> members;
    std::vector<curves::Series> series;
    for (const size_t run : groups_[group].runs) {
      curves::Series s;
      try {
        s = curves::series(curves::read_run(run_dirs_[run]), metric, axis);
      } catch (const std::exception&) {
        continue;  // its metrics.jsonl cannot be read (any more): left out, as a run without the metric
      }
      if (s.empty()) continue;
      members.push_back(run);
      series.push_back(std::move(s));
    }
    const curves::Band band = curves::band(series, kMaxBandPoints);
    std::string runs;
    for (const size_t run : members) runs += (runs.empty() ? "" : ", ") + std::to_string(run);
    res.set_content("{\"group\": " + std::to_string(group) + ", \"label\": " + base::json_quote(groups_[group].label) +
                        ", \"metric\": " + base::json_quote(metric) + ", \"x_axis\": " + base::json_quote(x) +
                        ", \"runs\": [" + runs + "], \"x\": " + json_numbers(band.x) +
                        ", \"mean\": " + json_numbers(band.mean) + ", \"low\": " + json_numbers(band.low) +
                        ", \"high\": " + json_numbers(band.high) + "}",
                    "application/json");
  });
  http_->Get("/api/config", [this](const Request& req, Response& res) {
    size_t run = 0;
    if (run_dirs_.empty() || !param_index(req, "run", run_dirs_.size() - 1, run)) {
      return bad_request(res, "run= must be the index of a run (GET /api/runs)");
    }
    size_t size = 0;
    res.set_content(read_part(run_dirs_[run] + "/config.lua", 0, kMaxConfigBytes, size), "text/plain; charset=utf-8");
  });
  http_->Get("/api/status", [this](const Request&, Response& res) { res.set_content(status(), "application/json"); });
}

}  // namespace moonseed::dashboard
