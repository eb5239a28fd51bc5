// What a process of each kind costs to start and to keep: the `moonseed`
// launcher, the lean moonseed-actor, and (the baseline, measured in the same
// run) a process that loads LibTorch, which every command and every actor was
// before the split (docs/performance.md "Start-up and memory").
//
// Part 1 starts each command ROUNDS times (alternating) and prints the fastest
// wall time and the peak resident memory (wait4's ru_maxrss) of each, with
// ratios against the LibTorch process. Part 2 trains CartPole with local
// actors and reads the resident memory of the learner and of each actor
// process from /proc while they run.
//
// usage: startup_bench [ROUNDS]   (default 10)
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "tests/e2e/process.h"

extern char** environ;

namespace {

using moonseed::testing::ChildProcess;

struct Start {
  double seconds = 0;
  long max_rss_kb = 0;
};

// Runs argv to its end with output discarded: wall time and peak RSS.
std::optional<Start> start_once(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  const auto begin = std::chrono::steady_clock::now();
  pid_t pid = -1;
  const int spawned = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) return std::nullopt;
  int status = 0;
  rusage usage{};
  if (::wait4(pid, &status, 0, &usage) != pid) return std::nullopt;
  Start out;
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  out.max_rss_kb = usage.ru_maxrss;
  return out;
}

// "VmRSS" or "VmHWM" of a live process, in kB; -1 when it is gone.
long status_kb(pid_t pid, const std::string& key) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key + ":", 0) == 0) return std::atol(line.c_str() + key.size() + 1);
  }
  return -1;
}

int parse_rounds(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 10;
  return rounds > 0 ? rounds : 10;
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = parse_rounds(argc, argv);
  const std::string dir = std::filesystem::path(MOONSEED_BINARY).parent_path();
  const std::string moonseed = MOONSEED_BINARY;
  struct Case {
    const char* name;
    std::vector<std::string> argv;
    std::vector<Start> starts;
  };
  std::vector<Case> cases = {
      {"LibTorch process (moonseed-engine run --help)", {dir + "/moonseed-engine", "run", "--help"}, {}},
      {"moonseed actor --help (launcher + exec)", {moonseed, "actor", "--help"}, {}},
      {"moonseed-actor --help", {dir + "/moonseed-actor", "--help"}, {}},
      {"moonseed log --help", {moonseed, "log", "--help"}, {}},
  };
  for (int r = 0; r < rounds; ++r) {
    for (Case& c : cases) {
      const std::optional<Start> s = start_once(c.argv);
      if (!s) {
        std::fprintf(stderr, "cannot run %s\n", c.argv[0].c_str());
        return 1;
      }
      c.starts.push_back(*s);
    }
  }
  std::printf("start-up, fastest of %d (wall) and peak RSS:\n", rounds);
  double base_s = 0, base_kb = 0;
  for (const Case& c : cases) {
    double best = c.starts[0].seconds;
    long rss = 0;
    for (const Start& s : c.starts) {
      best = std::min(best, s.seconds);
      rss = std::max(rss, s.max_rss_kb);
    }
    if (base_s == 0) base_s = best, base_kb = static_cast<double>(rss);
    std::printf("  %-48s %8.1f ms %8.1f MB   time x%.3f  RSS x%.3f\n", c.name, best * 1e3, rss / 1024.0,
                best / base_s, rss / base_kb);
  }

  // A real run: examples/cartpole_vtrace.lua with 2 local actors.
  moonseed::testing::TrainingRun run(std::string(MOONSEED_SOURCE_DIR) + "/examples/cartpole_vtrace.lua",
                                     {"stop.return_mean=0", "log.interval_s=0.25", "checkpoint.interval_s=0",
                                      "topology.actors=2"},
                                     "moonseed-startup-bench");
  ChildProcess learner(run.args({"stop.frames=100000000", "--quiet"}), run.runs_dir + "/learner.log");
  const std::string address = run.address_once_connected(2, 120);
  if (address.empty()) {
    std::fprintf(stderr, "the run did not connect its actors:\n%s\n",
                 moonseed::testing::read_file(run.runs_dir + "/learner.log").c_str());
    return 1;
  }
  ::sleep(3);  // a few seconds of training: buffers at their working size
  std::printf("training examples/cartpole_vtrace.lua with 2 local actors, resident memory now / peak:\n");
  const long learner_kb = status_kb(learner.pid(), "VmRSS");
  std::printf("  %-48s %8.1f MB  / %8.1f MB\n", "learner (moonseed-engine run)", learner_kb / 1024.0,
              status_kb(learner.pid(), "VmHWM") / 1024.0);
  for (int id = 0; id < 2; ++id) {
    const std::string pid_text =
        moonseed::testing::read_file(run.run_dir() + "/actors/actor-" + std::to_string(id) + ".pid");
    const pid_t pid = static_cast<pid_t>(std::atol(pid_text.c_str()));
    const long kb = status_kb(pid, "VmRSS");
    std::printf("  %-48s %8.1f MB  / %8.1f MB   x%.3f of the learner\n",
                ("actor " + std::to_string(id) + " (moonseed-actor)").c_str(), kb / 1024.0,
                status_kb(pid, "VmHWM") / 1024.0, static_cast<double>(kb) / static_cast<double>(learner_kb));
  }
  learner.signal(SIGINT);
  const std::optional<int> code = learner.wait(60);
  std::error_code ec;
  std::filesystem::remove_all(run.runs_dir, ec);
  return code == std::optional<int>(0) ? 0 : 1;
}
