#include "tests/netns/hosts.h"

#include <unistd.h>

#include <filesystem>
#include <sstream>
#include <stdexcept>
#include <utility>

#include "tests/e2e/process.h"

namespace moonseed::testing {
namespace {

constexpr double kCommandTimeoutS = 30;

// The path of an iproute2 tool ("ip", "tc"), or "" when there is none.
std::string tool(const std::string& name) {
  for (const char* dir : {"/usr/sbin/", "/sbin/", "/usr/bin/", "/bin/"}) {
    const std::string path = dir + name;
    if (::access(path.c_str(), X_OK) == 0) return path;
  }
  return "";
}

std::string joined(const std::vector<std::string>& argv) {
  std::string out;
  for (const std::string& a : argv) out += (out.empty() ? "" : " ") + a;
  return out;
}

}  // namespace

std::string HostNetwork::unavailable_reason() {
  if (::geteuid() != 0) {
    return "network namespaces need root, and this test runs as uid " + std::to_string(::geteuid()) +
           ": `ip netns add` is refused to other users";
  }
  for (const char* name : {"ip", "tc"}) {
    if (tool(name).empty()) return std::string("no `") + name + "` command (iproute2) in /usr/sbin, /sbin, /usr/bin or /bin";
  }
  const std::string dir = make_temp_dir("moonseed-netns-probe");
  const std::string probe = "moonseed-probe-" + std::to_string(::getpid());
  const Finished added = run_to_end({tool("ip"), "netns", "add", probe}, dir + "/add.log", kCommandTimeoutS);
  std::string reason;
  if (added.exit_code != 0) {
    reason = "`ip netns add " + probe + "` was refused: " + added.output;
  } else {
    run_to_end({tool("ip"), "netns", "del", probe}, dir + "/del.log", kCommandTimeoutS);
  }
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  return reason;
}

HostNetwork::HostNetwork(std::string prefix, std::vector<std::string> names, std::string log_dir)
    : prefix_(std::move(prefix)), names_(std::move(names)), log_dir_(std::move(log_dir)) {
  delete_namespaces_named_like_ours();
  const std::string ip = tool("ip");
  const std::string hub = prefix_ + "-hub";
  try {
    run({ip, "netns", "add", hub});
    run({ip, "-n", hub, "link", "add", "br0", "type", "bridge"});
    run({ip, "-n", hub, "link", "set", "br0", "up"});
    for (const std::string& name : names_) {
      const std::string ns = netns(name);
      const std::string port = "to-" + name;
      run({ip, "netns", "add", ns});
      run({ip, "-n", ns, "link", "set", "lo", "up"});
      // Made inside the hub and moved at once: no device ever appears in the machine's namespace.
      run({ip, "-n", hub, "link", "add", port, "type", "veth", "peer", "name", "eth0", "netns", ns});
      run({ip, "-n", hub, "link", "set", port, "master", "br0"});
      run({ip, "-n", hub, "link", "set", port, "up"});
      run({ip, "-n", ns, "addr", "add", address(name) + "/24", "dev", "eth0"});
      run({ip, "-n", ns, "link", "set", "eth0", "up"});
    }
  } catch (...) {
    delete_namespaces_named_like_ours();
    throw;
  }
}

HostNetwork::~HostNetwork() { delete_namespaces_named_like_ours(); }

void HostNetwork::delete_namespaces_named_like_ours() {
  const std::string ip = tool("ip");
  const Finished listed =
      run_to_end({ip, "netns", "list"}, log_dir_ + "/netns-list-" + std::to_string(++commands_) + ".log",
                 kCommandTimeoutS);
  std::istringstream lines(listed.output);
  for (std::string line; std::getline(lines, line);) {
    const std::string name = line.substr(0, line.find(' '));
    if (name.rfind(prefix_ + "-", 0) != 0) continue;
    run_to_end({ip, "netns", "del", name}, log_dir_ + "/netns-del-" + std::to_string(++commands_) + ".log",
               kCommandTimeoutS);
  }
}

std::string HostNetwork::run(const std::vector<std::string>& argv) {
  const std::string log = log_dir_ + "/command-" + std::to_string(++commands_) + ".log";
  const Finished f = run_to_end(argv, log, kCommandTimeoutS);
  if (f.exit_code != 0) {
    throw std::runtime_error("`" + joined(argv) + "` failed (exit " +
                             (f.exit_code ? std::to_string(*f.exit_code) : std::string("none: timed out")) +
                             "): " + f.output);
  }
  return f.output;
}

size_t HostNetwork::index_of(const std::string& host) const {
  for (size_t i = 0; i < names_.size(); ++i) {
    if (names_[i] == host) return i;
  }
  throw std::invalid_argument("no host named '" + host + "' in network " + prefix_);
}

std::string HostNetwork::address(const std::string& host) const {
  return "10.200.0." + std::to_string(index_of(host) + 1);
}

std::string HostNetwork::netns(const std::string& host) const { return prefix_ + "-" + names_.at(index_of(host)); }

std::vector<std::string> HostNetwork::command_in(const std::string& host, const std::vector<std::string>& argv) const {
  std::vector<std::string> out = {tool("ip"), "netns", "exec", netns(host)};
  out.insert(out.end(), argv.begin(), argv.end());
  return out;
}

void HostNetwork::cut(const std::string& host) {
  run({tool("ip"), "-n", prefix_ + "-hub", "link", "set", "to-" + names_.at(index_of(host)), "down"});
}

void HostNetwork::restore(const std::string& host) {
  run({tool("ip"), "-n", prefix_ + "-hub", "link", "set", "to-" + names_.at(index_of(host)), "up"});
}

void HostNetwork::cap_bandwidth(const std::string& host, const std::string& rate, const std::string& burst,
                                const std::string& latency) {
  const std::vector<std::string> tbf = {"root", "tbf", "rate", rate, "burst", burst, "latency", latency};
  std::vector<std::string> sent = {tool("tc"), "-n", netns(host), "qdisc", "replace", "dev", "eth0"};
  std::vector<std::string> received = {tool("tc"), "-n", prefix_ + "-hub", "qdisc", "replace", "dev", "to-" + host};
  sent.insert(sent.end(), tbf.begin(), tbf.end());
  received.insert(received.end(), tbf.begin(), tbf.end());
  run(sent);
  run(received);
}

std::string HostNetwork::qdiscs(const std::string& host) {
  return run({tool("tc"), "-n", netns(host), "qdisc", "show", "dev", "eth0"});
}

}  // namespace moonseed::testing
