// Other hosts on one machine, made of network namespaces, for end-to-end
// tests and benches of actors that reach their learner over a network.
//
// A HostNetwork of hosts {"a", "b"} with prefix P is:
//
//    netns P-a              netns P-hub               netns P-b
//    eth0 10.200.0.1/24 <-veth-> to-a   br0   to-b <-veth-> eth0 10.200.0.2/24
//    lo up                   (a bridge joins every host)        lo up
//
// Every device and address lives inside these namespaces: the machine's own
// namespace gets nothing, and no route leads out of them, so traffic never
// leaves the machine. A host runs a command through `ip netns exec`: the
// process keeps the machine's files (run directories, Unix sockets such as
// RUN_DIR/control.sock) and only its network is the host's.
//
// Ownership: the HostNetwork owns its namespaces; the destructor deletes them
// all, which removes the veths, the bridge and their qdiscs with them.
// Processes started in a host belong to the caller, who must end them first
// (a namespace with a process inside lives on, nameless, until it exits).
//
// Failure: the constructor first deletes namespaces named P-* (left by an
// earlier run that crashed), then throws std::runtime_error naming the
// command and its output if a step fails, after deleting what it made. cut,
// restore and cap_bandwidth throw the same way. unavailable_reason() says in
// advance why none of this can work here (not root, `ip` missing, or `ip
// netns add` refused), for GTEST_SKIP.
//
// Threads: not thread-safe; one test thread uses it.
#pragma once

#include <string>
#include <vector>

namespace moonseed::testing {

class HostNetwork {
 public:
  // "" when namespaces can be made here; otherwise why not, in a sentence.
  static std::string unavailable_reason();

  // Hosts named `names` (short: a device name "to-NAME" must fit 15 bytes),
  // getting 10.200.0.1, .2, ... in that order. `prefix` names this network's
  // namespaces; give each test its own. Logs of the `ip` commands go to
  // `log_dir`.
  HostNetwork(std::string prefix, std::vector<std::string> names, std::string log_dir);
  ~HostNetwork();
  HostNetwork(const HostNetwork&) = delete;
  HostNetwork& operator=(const HostNetwork&) = delete;

  // The host's address on the shared /24, e.g. "10.200.0.1".
  std::string address(const std::string& host) const;
  // The host's namespace, e.g. "P-a".
  std::string netns(const std::string& host) const;
  // `argv` to be run inside the host: ip netns exec NS argv... (argv[0] a path).
  std::vector<std::string> command_in(const std::string& host, const std::vector<std::string>& argv) const;

  // Pulls the host's cable: its port on the bridge goes down, so nothing
  // passes either way; the host keeps its address and routes, and its TCP
  // connections see only silence. restore() plugs it back.
  void cut(const std::string& host);
  void restore(const std::string& host);

  // Caps the host's link to `rate` (tc syntax, e.g. "2mbit") both ways with a
  // token bucket filter: `tbf rate R burst B latency L` on its eth0 (what it
  // sends) and on its bridge port (what it receives).
  void cap_bandwidth(const std::string& host, const std::string& rate, const std::string& burst = "32kb",
                     const std::string& latency = "100ms");
  // What `tc qdisc show` says of the host's eth0.
  std::string qdiscs(const std::string& host);

 private:
  // Runs `ip ARGS...` (or `tc`, as argv[0] says) to its end; throws with its output when it fails.
  std::string run(const std::vector<std::string>& argv);
  size_t index_of(const std::string& host) const;
  void delete_namespaces_named_like_ours();

  std::string prefix_;
  std::vector<std::string> names_;
  std::string log_dir_;
  int commands_ = 0;  // numbers the logs of run()
};

}  // namespace moonseed::testing
