// The dashboard's HTTP server (docs/dashboard.md): a page built into the
// binary (dashboard/assets.h) and the JSON it polls, read from run directories.
//
//   dashboard::Server server({run.path()}, auth_token);
//   std::string url = server.start("127.0.0.1:0");   // "http://127.0.0.1:PORT/"
//   server.set_status(status_json);                  // a live run, at each log tick
//
// What it serves (RUN = the index of a run directory given to the constructor):
//   GET /                          index.html; GET /NAME another built-in file (dashboard.js, ...)
//   GET /api/runs                  [{"run": 0, "name": "cartpole-20261126-120000", "group": 0,
//                                    "group_label": "cartpole (2 seeds)"}, ...]: the groups are
//                                  curves::group_runs of the runs' config.lua, read once by the
//                                  constructor (runs that differ only by their seed are one group)
//   GET /api/rows?run=RUN&from=B   metrics.jsonl's whole lines from byte B, at most kMaxChunkBytes:
//                                  {"from": B, "next": B2, "rows": [row, ...], "points": [bool, ...]};
//                                  points[i]: rows[i] is a point of the metrics (curves::is_point);
//                                  a line that is not a JSON object is left out; poll again from B2
//   GET /api/band?group=G&metric=M&x=frames|time_s
//                                  curves::band of group G's runs that have M (at most
//                                  kMaxBandPoints): {"group": G, "label": ..., "metric": M,
//                                  "x_axis": "frames", "runs": [RUN, ...], "x": [...], "mean": [...],
//                                  "low": [...], "high": [...]}; the arrays are empty when they do
//                                  not overlap
//   GET /api/config?run=RUN        config.lua as text (at most kMaxConfigBytes)
//   GET /api/status                the last set_status() JSON (a live run's `ctl status`), or null
// A missing or malformed parameter gets 400, an unknown path 404; the request
// size, the threads and the time a connection may take are bounded (server.cc; what is answered: routes.cc).
//
// Access: on a loopback address every request is served whose Host header names
// a loopback host or one of ServerOptions::hosts (so a web page elsewhere cannot
// reach it by DNS rebinding: others get 403). On any other address start()
// requires the token, and every request must carry it: as ?token=TOKEN (the
// reply then sets the cookie moonseed_token, so the page's own requests carry
// it), the cookie, or the header "Authorization: Bearer TOKEN"; compared in
// constant time; others get 401. Wrong tokens are throttled as an actor's are
// (rpc/guards.h AuthThrottle, ServerOptions::auth: per address and a global
// budget): a request refused unchecked gets 429 with Retry-After; refusals are
// logged as one summary line per interval.
//
// Failures: start() throws std::invalid_argument for an address that is not
// HOST:PORT or one beyond loopback without a token, std::runtime_error when it
// cannot listen. Requests never throw out of the server: a failure is a 500.
//
// Connections: a connection waits in the RequestGate (dashboard/request_gate.h,
// at most kMaxPending, the oldest closed beyond) until its request's head has
// arrived, which must be within kHeaderDeadlineS of its accept or of its
// previous request's answer (else 408 and close), so slow clients never hold
// a thread. Then kThreads serve requests at once and at most kMaxWaiting more
// wait for one (ConnectionQueue); beyond that a request gets 503.
//
// Thread-safety: start() and stop() from one thread; set_status() from any.
// Requests run on the server's own threads, so whoever calls set_status()
// waits at most for a string copy.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/mutex.h"
#include "curves/runs.h"
#include "dashboard/request_gate.h"
#include "rpc/guards.h"

namespace moonseed::dashboard {

class ConnectionQueue;
class HttpServer;

struct ServerOptions {
  // Names the Host header may carry besides the loopback ones (dashboard.hosts:
  // how a browser elsewhere reaches a dashboard listening on loopback, e.g. through
  // an SSH tunnel or a reverse proxy that keeps the name).
  std::vector<std::string> hosts;
  // Wrong tokens (listening beyond loopback): per address and globally.
  rpc::detail::AuthThrottleOptions auth = auth_defaults();
  static rpc::detail::AuthThrottleOptions auth_defaults();
  // The defaults with `hosts` from dashboard.hosts ("a.lab, b.lab"); throws
  // std::invalid_argument naming a name that is not a host name.
  static ServerOptions with_hosts(const std::string& hosts);
};

class Server {
 public:
  static constexpr size_t kMaxChunkBytes = 1 << 20;   // metrics.jsonl bytes per /api/rows reply
  static constexpr size_t kMaxConfigBytes = 1 << 20;  // config.lua bytes served
  static constexpr int kThreads = 4;                  // requests served at once
  static constexpr size_t kMaxWaiting = 16;           // requests waiting for a thread
  static constexpr size_t kMaxPending = 256;          // connections waiting for their request's head
  static constexpr int kHeaderDeadlineS = 3;          // a whole request, from accept or the previous answer
  static constexpr int kReadTimeoutS = 5;             // each write of an answer
  static constexpr int kKeepAliveMax = 100;           // requests per connection
  static constexpr size_t kMaxBandPoints = 1000;      // x values of a /api/band reply
  static constexpr size_t kMaxMetricName = 200;       // bytes of /api/band's metric=

  Server(std::vector<std::string> run_dirs, std::string auth_token, ServerOptions options = {});
  ~Server();  // stop()
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Listens on `listen` ("HOST:PORT", "[::1]:PORT"; port 0 = a free one) and
  // serves on threads of its own. Returns the page's URL, "http://HOST:PORT/".
  // Throws as check_listen, or std::runtime_error when it cannot listen.
  std::string start(const std::string& listen);
  // Throws std::invalid_argument for a `listen` that is not HOST:PORT, or one
  // that reaches beyond this host without a token: a run checks it with its
  // other start-up checks, before it writes anything.
  static void check_listen(const std::string& listen, bool have_token);
  void stop();

  void set_status(std::string json);

 private:
  void route();
  std::string status() const;
  // On the gate's thread: a request's head is in; to a worker, or 503.
  void hand_over(RequestGate::Connection&& c);
  // On a worker: answers one request, then the connection goes back to the gate or closes.
  void serve(RequestGate::Connection& c);

  const std::vector<std::string> run_dirs_;
  const std::vector<curves::Group> groups_;  // runs indexes into run_dirs_
  std::vector<size_t> group_of_;  // run index -> group index
  const std::string token_;
  const ServerOptions options_;
  bool require_token_ = false;  // listening beyond loopback
  std::unique_ptr<rpc::detail::AuthThrottle> auth_throttle_;
  std::unique_ptr<HttpServer> http_;
  std::unique_ptr<ConnectionQueue> workers_;  // declared after http_: destroyed before it
  std::unique_ptr<RequestGate> gate_;         // hands to workers_: destroyed first
  std::thread thread_;
  mutable base::Mutex mu_;
  std::string status_ GUARDED_BY(mu_) = "null";
};

// True when `listen` ("HOST:PORT") is an address only this host can reach.
// Throws std::invalid_argument when it is not HOST:PORT.
bool listen_is_loopback(const std::string& listen);

}  // namespace moonseed::dashboard
