// Actors that die, hang or never work, caused for real on a CartPole run:
// kill -9 at a fixed rate, SIGSTOP / SIGCONT, an actor binary that fails at
// start. What is asserted are counts and events in metrics.jsonl; the two
// figures with a time in them (connected share, rejoin time) have bounds far
// looser than the goals, and are printed.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/e2e/actor_list.h"
#include "tests/e2e/process.h"

namespace moonseed::testing {
namespace {

const std::string kBinary = MOONSEED_BINARY;
const std::string kExample = std::string(MOONSEED_SOURCE_DIR) + "/examples/cartpole_vtrace.lua";

std::vector<MetricsRow> events(const TrainingRun& run, const std::string& name) {
  return read_events(run.run_dir() + "/metrics.jsonl", name);
}

// Rows about actor `id`.
std::vector<MetricsRow> of_actor(const std::vector<MetricsRow>& rows, int id) {
  std::vector<MetricsRow> out;
  for (const MetricsRow& r : rows) {
    if (r.count("actor") && r.at("actor") == id) out.push_back(r);
  }
  return out;
}

pid_t pid_in(const TrainingRun& run, int id) {
  const std::string text = read_file(run.run_dir() + "/actors/actor-" + std::to_string(id) + ".pid");
  return text.empty() ? -1 : std::stoi(text);
}

// For a run whose killed actors were never reported dead (seen once, under
// CI's load, and not reproduced since): each victim's state in /proc (a
// zombie nobody reaped, a process stuck in the kernel, or gone), and the
// learner's threads when gdb is there.
std::string stall_report(const TrainingRun& run, pid_t learner, const std::vector<pid_t>& victims) {
  std::string out = "victims (pid: /proc/PID/stat, wchan):\n";
  for (pid_t v : victims) {
    const std::string proc = "/proc/" + std::to_string(v);
    out += "  " + std::to_string(v) + ": " + read_file(proc + "/stat") + " wchan " + read_file(proc + "/wchan") + "\n";
  }
  if (::access("/usr/bin/gdb", X_OK) == 0) {
    const std::string path = run.runs_dir + "/learner-threads.txt";
    const std::string gdb = "/usr/bin/gdb -p " + std::to_string(learner) + " -batch -ex 'thread apply all bt' > " + path + " 2>&1";
    if (std::system(gdb.c_str()) >= 0) out += "the learner's threads:\n" + read_file(path) + "\n";
  }
  return out;
}

// Every line of metrics.jsonl is one whole JSON object.
void expect_whole_rows(const TrainingRun& run) {
  std::ifstream in(run.run_dir() + "/metrics.jsonl");
  int n = 0;
  for (std::string line; std::getline(in, line); ++n) {
    ASSERT_FALSE(line.empty()) << "row " << n;
    EXPECT_EQ(line.front(), '{') << line;
    EXPECT_EQ(line.back(), '}') << line;
  }
  EXPECT_GT(n, 0);
}

TEST(ActorFaults, FourActorsKilledAtAFixedRateStayMostlyConnectedAndRejoinFast) {
  TrainingRun run(kExample, {"log.interval_s=0.2", "stop.return_mean=0", "topology.actors=4"}, "moonseed-kills");
  ChildProcess learner(run.args({kUntilStopped}), run.log);
  ASSERT_TRUE(eventually(60, [&] { return !run.run_dir().empty() && last(run.metrics(), "actors") == 4; }))
      << read_file(run.log);
  constexpr int kKills = 16;
  std::vector<pid_t> victims;
  for (int k = 0; k < kKills; ++k) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    const pid_t victim = pid_in(run, k % 4);
    ASSERT_GT(victim, 0);
    ASSERT_EQ(::kill(victim, SIGKILL), 0) << "kill " << k;
    victims.push_back(victim);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  ASSERT_TRUE(eventually(30, [&] { return last(run.metrics(), "actor_restarts") == kKills; }))
      << stall_report(run, learner.pid(), victims) << read_file(run.log);
  // Every replacement has joined before the stop (on a loaded core a restart can take seconds):
  // the 4 first joins and one per kill.
  ASSERT_TRUE(eventually(60, [&] { return events(run, "actor_joined").size() >= 4 + kKills; })) << read_file(run.log);
  learner.signal(SIGTERM);
  ASSERT_EQ(learner.wait(60), std::optional<int>(0)) << read_file(run.log);
  expect_whole_rows(run);

  // Each kill is a leave, and the slot's next join is its replacement.
  const std::vector<MetricsRow> left = events(run, "actor_left");
  const std::vector<MetricsRow> joined = events(run, "actor_joined");
  double worst_rejoin = 0, first_kill = 1e300, last_kill = 0;
  int rejoins = 0;
  for (const MetricsRow& l : left) {
    const double at = l.at("time_s");
    const std::vector<MetricsRow> same = of_actor(joined, static_cast<int>(l.at("actor")));
    auto next = std::find_if(same.begin(), same.end(), [&](const MetricsRow& j) { return j.at("time_s") >= at; });
    if (next == same.end()) continue;  // the stop: nobody rejoins after it
    first_kill = std::min(first_kill, at);
    last_kill = std::max(last_kill, at);
    worst_rejoin = std::max(worst_rejoin, next->at("time_s") - at);
    ++rejoins;
  }
  EXPECT_EQ(rejoins, kKills) << read_file(run.log);
  // Four deaths of each slot within the death window are fewer than half of topology.actor_deaths_to_park.
  EXPECT_EQ(read_file(run.log).find("; restarting in "), std::string::npos) << "every kill restarted at once";
  // The share of metrics rows, while the kills went on, with at least 3 of 4 actors connected.
  int rows = 0, three_or_more = 0;
  for (const MetricsRow& r : run.metrics()) {
    if (r.count("event") || !r.count("actors") || r.at("time_s") < first_kill || r.at("time_s") > last_kill) continue;
    ++rows;
    three_or_more += r.at("actors") >= 3 ? 1 : 0;
  }
  const double share = rows > 0 ? static_cast<double>(three_or_more) / rows : 0;
  std::printf("kill -9 every 1.5 s: %d of %d rows with >= 3 of 4 actors (%.0f%%); slowest rejoin %.2f s\n",
              three_or_more, rows, 100 * share, worst_rejoin);
  EXPECT_GT(rows, 20);
  EXPECT_GE(share, 0.75) << "goal: 90%";
  EXPECT_LE(worst_rejoin, 10) << "goal: 3 s";
}

TEST(ActorFaults, AStoppedLocalActorIsReportedKilledAndReplaced) {
  TrainingRun run(kExample, {"log.interval_s=0.2", "stop.return_mean=0", "topology.actor_timeout_s=2"},
                  "moonseed-hung");
  ChildProcess learner(run.args({kUntilStopped}), run.log);
  ASSERT_TRUE(eventually(60, [&] { return !run.run_dir().empty() && last(run.metrics(), "actors") == 2; }))
      << read_file(run.log);
  const pid_t victim = pid_in(run, 0);
  ASSERT_EQ(::kill(victim, SIGSTOP), 0);
  ASSERT_TRUE(eventually(60, [&] { return !of_actor(events(run, "actor_hung"), 0).empty(); })) << read_file(run.log);
  const MetricsRow hung = of_actor(events(run, "actor_hung"), 0).front();
  EXPECT_EQ(hung.at("pid"), victim);
  // Killed (a stopped process takes SIGKILL) and restarted; training goes on with both.
  ASSERT_TRUE(eventually(60, [&] { return pid_in(run, 0) != victim && last(run.metrics(), "actors") == 2; }))
      << read_file(run.log);
  EXPECT_NE(::kill(victim, 0), 0) << "the stopped actor is gone";
  const double frames = last(run.metrics(), "frames");
  EXPECT_TRUE(eventually(60, [&] { return last(run.metrics(), "frames") > frames; }));
  EXPECT_NE(read_file(run.log).find("is hung: no step batch for"), std::string::npos) << read_file(run.log);
  // The kill was a death of slot 0, with the hang as its cause: in the line, the rows and `ctl status`.
  EXPECT_NE(read_file(run.log).find("actor 0 (env CartPole-v1, pid " + std::to_string(victim) +
                                    ") hung: no step batch for "),
            std::string::npos)
      << read_file(run.log);
  EXPECT_EQ(last(run.metrics(), "actor_deaths"), 1);
  const std::string status =
      run_to_end({kBinary, "ctl", run.run_dir(), "status"}, run.runs_dir + "/ctl.log", 60).output;
  EXPECT_NE(status.find("\"local_actors\": [{\"id\": 0, \"state\": \"running\""), std::string::npos) << status;
  EXPECT_NE(status.find("\"hung\": 1, \"last_death\": \"hung: no step batch for "), std::string::npos) << status;
  EXPECT_NE(status.find("\"actors_parked\": 0"), std::string::npos) << status;
  learner.signal(SIGTERM);
  EXPECT_EQ(learner.wait(60), std::optional<int>(0)) << read_file(run.log);
  EXPECT_TRUE(of_actor(events(run, "actor_hung"), 1).empty()) << "the healthy actor was left alone";
}

TEST(ActorFaults, ARemoteActorIsLoggedAsItJoinsHangsAndComesBackAfterSigcont) {
  TrainingRun run(kExample,
                  {"log.interval_s=0.2", "stop.return_mean=0", "topology.actor_timeout_s=2",
                   "topology.local_actors=1"},
                  "moonseed-remote");
  ChildProcess learner(run.args({kUntilStopped}), run.log);
  const std::string address = run.address_once_connected(1, 60);
  ASSERT_FALSE(address.empty()) << read_file(run.log);
  const std::string remote_log = run.runs_dir + "/remote.log";
  ChildProcess remote({kBinary, "actor", "--connect", address}, remote_log);
  ASSERT_TRUE(eventually(60, [&] { return last(run.metrics(), "actors") == 2; })) << read_file(run.log);
  ASSERT_TRUE(eventually(10, [&] { return !of_actor(events(run, "actor_joined"), 1).empty(); }));
  EXPECT_EQ(of_actor(events(run, "actor_joined"), 1).front().at("pid"), remote.pid());
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  const std::string metrics_text = read_file(run.run_dir() + "/metrics.jsonl");
  EXPECT_NE(metrics_text.find("\"event\": \"actor_joined\", \"actor\": 1, \"host\": \"" + std::string(host) + "\""),
            std::string::npos)
      << metrics_text;

  remote.signal(SIGSTOP);
  ASSERT_TRUE(eventually(60, [&] { return !of_actor(events(run, "actor_hung"), 1).empty(); })) << read_file(run.log);
  EXPECT_TRUE(eventually(10, [&] { return last(run.metrics(), "actors") == 1; })) << "its slot is free";
  remote.signal(SIGCONT);
  // It reads the learner's Bye, which asks it to reconnect, and does.
  ASSERT_TRUE(eventually(60, [&] {
    return of_actor(events(run, "actor_joined"), 1).size() >= 2 && last(run.metrics(), "actors") == 2;
  })) << read_file(run.log) << read_file(remote_log);
  EXPECT_TRUE(remote.running());
  EXPECT_NE(read_file(remote_log).find("reconnecting"), std::string::npos) << read_file(remote_log);
  learner.signal(SIGTERM);
  EXPECT_EQ(learner.wait(60), std::optional<int>(0)) << read_file(run.log);
  EXPECT_EQ(remote.wait(30), std::optional<int>(0)) << read_file(remote_log);
  expect_whole_rows(run);
}

// The actor list of `moonseed ctl RUN status`: a local and a remote actor with
// growing frames and a rate; the remote one, killed -9, is listed as
// disconnected, and its replacement takes the slot as its second connection.
TEST(ActorFaults, CtlStatusListsAKilledActorAsDisconnectedAndItsReplacementAsASecondConnection) {
  TrainingRun run(kExample, {"log.interval_s=0.2", "stop.return_mean=0", "topology.local_actors=1"},
                  "moonseed-actor-list");
  ChildProcess learner(run.args({kUntilStopped}), run.log);
  const std::string address = run.address_once_connected(1, 60);
  ASSERT_FALSE(address.empty()) << read_file(run.log);
  int calls = 0;
  std::string status;
  auto actors = [&] {
    status = run_to_end({kBinary, "ctl", run.run_dir(), "status"},
                        run.runs_dir + "/ctl-" + std::to_string(++calls) + ".log", 60)
                 .output;
    return listed_actors(status);
  };
  auto remote_log = [&](int n) { return run.runs_dir + "/remote-" + std::to_string(n) + ".log"; };
  std::optional<ChildProcess> remote;
  remote.emplace(std::vector<std::string>{kBinary, "actor", "--connect", address}, remote_log(1));
  const pid_t first_pid = remote->pid();
  std::vector<ListedActor> list;
  ASSERT_TRUE(eventually(60, [&] {
    list = actors();
    return list.size() == 2 && list[1].connected && list[1].frames > 0 && !std::isnan(list[1].fps);
  })) << status << read_file(run.log);
  EXPECT_EQ(list[0].id, 0);
  EXPECT_EQ(list[1].id, 1);
  EXPECT_EQ(list[1].pid, first_pid);
  EXPECT_EQ(list[1].connections, 1);
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  EXPECT_EQ(list[1].host, host);
  const double frames = list[1].frames, local_frames = list[0].frames;
  ASSERT_TRUE(eventually(60, [&] {
    list = actors();
    return list.size() == 2 && list[0].frames > local_frames && list[1].frames > frames;
  })) << "both actors' frames grow: " << status;

  remote->signal(SIGKILL);
  EXPECT_EQ(remote->wait(30), std::optional<int>(128 + SIGKILL));
  ASSERT_TRUE(eventually(60, [&] {
    list = actors();
    return list.size() == 2 && !list[1].connected;
  })) << status;
  EXPECT_TRUE(std::isnan(list[1].fps)) << status;
  EXPECT_TRUE(std::isnan(list[1].connected_s)) << status;
  EXPECT_EQ(list[1].pid, first_pid) << "its last connection's";
  EXPECT_TRUE(list[0].connected);
  const double frames_before = list[1].frames;

  remote.emplace(std::vector<std::string>{kBinary, "actor", "--connect", address}, remote_log(2));
  ASSERT_TRUE(eventually(60, [&] {
    list = actors();
    return list.size() == 2 && list[1].connected && list[1].frames > frames_before && !std::isnan(list[1].fps);
  })) << status << read_file(remote_log(2));
  EXPECT_EQ(list[1].connections, 2) << status;
  EXPECT_EQ(list[1].pid, remote->pid()) << status;
  learner.signal(SIGTERM);
  EXPECT_EQ(learner.wait(60), std::optional<int>(0)) << read_file(run.log);
  remote->wait(30);
}

TEST(ActorFaults, ActorsThatFailAtStartAreParkedAndTheRunStopsQuotingTheirLog) {
  // A moonseed whose moonseed-actor (found beside it) cannot start.
  const std::string dir = make_temp_dir("moonseed-broken-install");
  std::filesystem::copy_file(kBinary, dir + "/moonseed");
  const std::string engine = std::filesystem::path(kBinary).parent_path() / "moonseed-engine";
  std::filesystem::copy_file(engine, dir + "/moonseed-engine");
  {
    std::ofstream actor(dir + "/moonseed-actor");
    actor << "#!/bin/sh\necho \"moonseed-actor: error while loading shared libraries: libluajit-5.1.so.2\" >&2\n"
             "exit 127\n";
  }
  ::chmod((dir + "/moonseed-actor").c_str(), 0755);
  ::chmod((dir + "/moonseed").c_str(), 0755);
  ::chmod((dir + "/moonseed-engine").c_str(), 0755);
  TrainingRun run(kExample, {"log.interval_s=0.2", "stop.return_mean=0"}, "moonseed-parked");
  std::vector<std::string> args = run.args({kUntilStopped});
  args[0] = dir + "/moonseed";
  ChildProcess learner(args, run.log);
  // 1 + 2 + 4 + 8 s of backoff, then the fifth early death parks each slot.
  const std::optional<int> code = learner.wait(120);
  ASSERT_TRUE(code.has_value()) << read_file(run.log);
  EXPECT_EQ(*code, 1) << read_file(run.log);
  const std::string log = read_file(run.log);
  EXPECT_NE(log.find("(env CartPole-v1, pid "), std::string::npos) << log;
  EXPECT_NE(log.find("exited with code 127 before its first env step, 5 times in a row: not restarting it"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("    moonseed-actor: error while loading shared libraries"), std::string::npos) << log;
  EXPECT_NE(log.find("stopped: no actor can run: every local actor slot is parked"), std::string::npos) << log;
  EXPECT_EQ(events(run, "actor_parked").size(), 2u);
  EXPECT_EQ(events(run, "stop").size(), 1u);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace moonseed::testing
