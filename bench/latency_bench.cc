// Frames per second against the latency between the actors and the learner
// (docs/performance.md "Actors on other hosts"): the learner (`moonseed run`,
// TCP) in one network namespace, two `moonseed actor` processes in another,
// both behind the delaying relay (tests/netns/delay_relay.cc) holding each
// chunk 0, 1, 5 or 10 ms one way. The 0 ms case goes through the relay too, so
// the ratios measure the delay alone, not the extra hop.
//   cartpole: examples/cartpole_vtrace.lua (V-trace, CartPole-v1)
//   breakout: examples/minatar_vtrace.lua  (V-trace, MinAtar Breakout-v1)
// each with topology.groups_per_actor 1 and 2: while one group's step is on
// the wire the other steps its envs, so two groups hide part of the round trip.
// Printed per workload and groups: fps at 0 ms, then fps at each delay as a
// ratio to the 0 ms figure of the same run of this bench, and the ratio of 2
// groups to 1 at each delay. The fps of a run is over its steady part (frames
// after the first 2 s of rows to its last row); with several rounds, the
// median. Delays are run in turn, reversed every other round, so that a drift
// of the machine biases no delay.
// With `group`, the same sweep for a learner group of 2 ranks, each in a host
// of its own (rank 0 in "learner", rank 1 in "rank1"), each with one actor in a
// host of its own behind its relay (the actors' hosts "actors" and "actors1"):
// the group's frames (rank 0's rows), so that the delay's cost to a group can
// be read beside a single learner's in the same run of this bench.
// Needs root (network namespaces, tests/netns/hosts.h).
// Usage: latency_bench [seconds=10] [rounds=1] [cartpole|breakout|both=both] [single|group|all=single]
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "bench/bench_util.h"
#include "tests/e2e/process.h"
#include "tests/netns/delay_relay.h"
#include "tests/netns/hosts.h"

namespace {

using moonseed::bench::median;
using moonseed::testing::ChildProcess;
using moonseed::testing::HostNetwork;
using moonseed::testing::MetricsRow;

const std::vector<double> kDelaysMs = {0, 1, 5, 10};
constexpr int kActors = 2;

struct Workload {
  std::string name;
  std::string script;
};

// Frames per second over the steady part of one run; 0 when it failed (said on stderr).
// `ranks` 1: one learner, both actors behind one relay; 2: a group, one actor per rank.
double run_once(HostNetwork& hosts, const Workload& w, int ranks, int groups, double delay_ms, double seconds) {
  const std::string dir = moonseed::testing::make_temp_dir("moonseed-latency-bench");
  const std::string token = dir + "/token";
  moonseed::testing::save_like_an_editor(token, "latency-bench\n");
  ::chmod(token.c_str(), 0600);
  const std::vector<std::string> rank_hosts = {"learner", "rank1"};
  const std::vector<std::string> actor_hosts = {"actors", "actors1"};
  const std::string rendezvous = "tcp:" + hosts.address("learner") + ":29500";
  std::vector<std::unique_ptr<ChildProcess>> learners, relays, actors;
  std::vector<std::string> addresses;
  for (int r = 0; r < ranks; ++r) {
    const std::string at = hosts.address(rank_hosts[static_cast<size_t>(r)]) + ":7000";
    addresses.push_back(at);
    std::vector<std::string> args = {MOONSEED_BINARY, "run", w.script, "runs_dir=" + dir + "/runs",
                                     "stop.seconds=" + std::to_string(seconds), "stop.frames=0",
                                     "stop.return_mean=0", "log.interval_s=0.5", "checkpoint.interval_s=0",
                                     "--quiet", "topology.transport=\"tcp\"", "topology.listen=\"tcp:" + at + "\"",
                                     "topology.local_actors=0", "topology.actors=" + std::to_string(kActors),
                                     "topology.groups_per_actor=" + std::to_string(groups),
                                     "--auth-token-file", token};
    if (ranks > 1) {
      args.insert(args.end(), {"--rank", std::to_string(r), "--world-size", std::to_string(ranks), "--rendezvous",
                               rendezvous});
    }
    learners.push_back(std::make_unique<ChildProcess>(hosts.command_in(rank_hosts[static_cast<size_t>(r)], args),
                                                      dir + "/learner-" + std::to_string(r) + ".log"));
  }
  // Actors that came before the learner listens would spin on refusals: wait for its address
  // file (rank 1's under rank 0's run directory).
  const bool listening = moonseed::testing::eventually(120, [&] {
    const auto runs = moonseed::testing::list_dirs(dir + "/runs");
    return runs.size() == 1 && !moonseed::testing::read_file(runs[0] + "/learner.address").empty() &&
           (ranks == 1 || !moonseed::testing::read_file(runs[0] + "/ranks/1/learner.address").empty());
  });
  for (int i = 0; i < kActors && listening; ++i) {
    const size_t r = static_cast<size_t>(ranks == 1 ? 0 : i);
    const std::string host = actor_hosts[r];
    if (relays.size() <= r) {
      const std::string log = dir + "/relay-" + std::to_string(r) + ".log";
      relays.push_back(std::make_unique<ChildProcess>(
          hosts.command_in(host, moonseed::testing::delay_relay_args("127.0.0.1:0", addresses[r], delay_ms)), log));
    }
    const int port = moonseed::testing::relay_port(dir + "/relay-" + std::to_string(r) + ".log", 60);
    if (port <= 0) break;
    actors.push_back(std::make_unique<ChildProcess>(
        hosts.command_in(host, {MOONSEED_BINARY, "actor", "--connect", "tcp:127.0.0.1:" + std::to_string(port),
                                "--auth-token-file", token}),
        dir + "/actor-" + std::to_string(i) + ".log"));
  }
  bool ended = true;
  for (auto& l : learners) ended = l->wait(seconds + 180) == std::optional<int>(0) && ended;
  if (!ended || actors.size() != static_cast<size_t>(kActors)) {
    std::fprintf(stderr, "%s, %d rank(s), %d groups, %.0f ms: the run failed:\n%s\n", w.name.c_str(), ranks, groups,
                 delay_ms, moonseed::testing::read_file(dir + "/learner-0.log").c_str());
    return 0;
  }
  for (auto& a : actors) a->wait(30);
  const auto runs = moonseed::testing::list_dirs(dir + "/runs");
  const std::vector<MetricsRow> rows = moonseed::testing::read_metrics(runs.at(0) + "/metrics.jsonl");
  const MetricsRow* first = nullptr;
  const MetricsRow* last = nullptr;
  double started = -1;
  for (const MetricsRow& r : rows) {
    if (r.count("event") || !r.count("frames")) continue;
    if (started < 0 && r.at("frames") > 0) started = r.at("time_s");
    if (started >= 0 && !first && r.at("time_s") >= started + 2) first = &r;
    last = &r;
  }
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  if (!first || first == last) {
    std::fprintf(stderr, "%s, %d groups, %.0f ms: run too short to measure\n", w.name.c_str(), groups, delay_ms);
    return 0;
  }
  return (last->at("frames") - first->at("frames")) / (last->at("time_s") - first->at("time_s"));
}

bool measure(HostNetwork& hosts, const Workload& w, int ranks, double seconds, int rounds) {
  std::map<std::pair<int, double>, std::vector<double>> fps;  // (groups, delay) -> per round
  for (int round = 0; round < rounds; ++round) {
    std::vector<double> order = kDelaysMs;
    if (round % 2 == 1) std::reverse(order.begin(), order.end());
    for (int groups : {1, 2}) {
      for (double delay : order) {
        const double f = run_once(hosts, w, ranks, groups, delay, seconds);
        if (f <= 0) return false;
        fps[{groups, delay}].push_back(f);
        std::printf("  %-8s %d rank(s), round %d, %d group(s), %4.0f ms one way: %8.0f frames/s\n", w.name.c_str(),
                    ranks, round + 1, groups, delay, f);
        std::fflush(stdout);
      }
    }
  }
  std::printf("%s, %s\n", w.name.c_str(), ranks == 1 ? "one learner" : "a group of 2 ranks on 2 hosts");
  std::printf("%-8s groups   fps at 0 ms", w.name.c_str());
  for (size_t i = 1; i < kDelaysMs.size(); ++i) std::printf("   %2.0f ms/0 ms", kDelaysMs[i]);
  std::printf("\n");
  for (int groups : {1, 2}) {
    const double base = median(fps[{groups, 0.0}]);
    std::printf("%-8s %6d   %11.0f", w.name.c_str(), groups, base);
    for (size_t i = 1; i < kDelaysMs.size(); ++i) std::printf("   %10.2f", median(fps[{groups, kDelaysMs[i]}]) / base);
    std::printf("\n");
  }
  std::printf("%-8s 2 groups / 1 group:", w.name.c_str());
  for (double delay : kDelaysMs) {
    std::printf("  %.0f ms %.2f", delay, median(fps[{2, delay}]) / median(fps[{1, delay}]));
  }
  std::printf("\n");
  std::fflush(stdout);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  const double seconds = argc > 1 ? std::stod(argv[1]) : 10;
  const int rounds = argc > 2 ? std::stoi(argv[2]) : 1;
  const std::string which = argc > 3 ? argv[3] : "both";
  const std::string layout = argc > 4 ? argv[4] : "single";
  const std::string why = HostNetwork::unavailable_reason();
  if (!why.empty()) {
    std::fprintf(stderr, "latency_bench: %s\n", why.c_str());
    return 2;
  }
  const std::string logs = moonseed::testing::make_temp_dir("moonseed-latency-bench-hosts");
  HostNetwork hosts("moonseed-latency-bench", {"learner", "actors", "rank1", "actors1"}, logs);
  std::printf("latency_bench: %d actors of 32 envs; one learner: actors in one network namespace, the learner in "
              "another; a group: each rank and each rank's actor in a namespace of its own; %.0f s of training per "
              "run, %d round(s)\n",
              kActors, seconds, rounds);
  const std::string examples = std::string(MOONSEED_SOURCE_DIR) + "/examples/";
  const std::vector<Workload> workloads = {{"cartpole", examples + "cartpole_vtrace.lua"},
                                           {"breakout", examples + "minatar_vtrace.lua"}};
  for (const Workload& w : workloads) {
    if (which != "both" && which != w.name) continue;
    for (int ranks : {1, 2}) {
      if ((ranks == 1 && layout == "group") || (ranks == 2 && layout == "single")) continue;
      if (!measure(hosts, w, ranks, seconds, rounds)) return 1;
    }
  }
  return 0;
}
