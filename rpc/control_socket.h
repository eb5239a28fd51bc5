// The control socket of a run (RUN_DIR/control.sock, mode 0600): how
// `moonseed ctl`, `moonseed attach` and the REPL talk to a running learner.
//
// Protocol: one request per line, one reply per line, in order.
//   request: COMMAND [ARGUMENTS]        e.g. "status", "set optimizer.lr 3e-4"
//   reply:   a JSON object              {"ok": true, "result": ...} or
//                                       {"ok": false, "error": "..."}
// Commands and their meaning belong to the run (cli/engine/run_control.h); this file
// only moves lines. A request line longer than kMaxControlLine bytes closes
// that client with an error reply; other clients go on. A client that sends
// requests and does not read the replies is not read from while
// kMaxControlReplies bytes of its replies wait (its own sends then block), so
// what it costs the run stays bounded; at most kMaxControlClients clients are
// connected at once (one more is told so and closed).
//
// ControlServer is driven by its owner's poll() loop (no thread of its own):
// add_poll_fds() before poll, serve() after. Not thread-safe.
// ControlClient is a blocking client; not thread-safe.
#pragma once

#include <poll.h>

#include <chrono>
#include <functional>
#include <string>
#include <vector>

namespace moonseed::rpc {

constexpr size_t kMaxControlLine = 64 * 1024;
constexpr size_t kMaxControlReplies = 1024 * 1024;
constexpr size_t kMaxControlClients = 64;

class ControlServer {
 public:
  // Listens on `path` (a stale socket there is replaced). Throws std::system_error.
  explicit ControlServer(std::string path);
  ~ControlServer();  // closes every client and removes the socket file
  ControlServer(const ControlServer&) = delete;
  ControlServer& operator=(const ControlServer&) = delete;

  const std::string& path() const { return path_; }

  // Appends the listening socket and every client to `fds`.
  void add_poll_fds(std::vector<pollfd>& fds) const;

  // Handles what poll() reported for this server's entries in `fds`: accepts
  // clients, reads complete lines and answers each with handle(line) (which
  // returns the JSON reply without the newline), writes pending replies.
  // Never blocks.
  using Handler = std::function<std::string(const std::string& request)>;
  void serve(const std::vector<pollfd>& fds, const Handler& handle);

  size_t clients() const { return clients_.size(); }

 private:
  struct Client {
    int fd = -1;
    std::string in;
    std::string out;
    bool closing = false;  // close once `out` is written
  };
  void read_from(Client& client, const Handler& handle);
  // Answers the complete lines in `in` while the replies waiting are under kMaxControlReplies.
  void answer(Client& client, const Handler& handle);
  static bool reading(const Client& client) { return client.out.size() < kMaxControlReplies; }
  void write_to(Client& client);

  std::string path_;
  int listen_fd_ = -1;
  std::vector<Client> clients_;
};

class ControlClient {
 public:
  // Throws std::runtime_error naming the path (and saying whether the run
  // seems to have ended) when nothing accepts there.
  explicit ControlClient(const std::string& path);
  ~ControlClient();
  ControlClient(ControlClient&& other) noexcept;
  ControlClient& operator=(ControlClient&&) = delete;
  ControlClient(const ControlClient&) = delete;
  ControlClient& operator=(const ControlClient&) = delete;

  // Sends one request line and waits up to `timeout` for its reply line.
  // Throws std::runtime_error when the run closes the socket or the time passes.
  std::string request(const std::string& line, std::chrono::milliseconds timeout);

 private:
  int fd_ = -1;
  std::string in_;
};

}  // namespace moonseed::rpc
