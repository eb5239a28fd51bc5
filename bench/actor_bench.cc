// Env steps per second of one actor process, C++ against Python, on the same env and env count,
// against a learner that answers every StepBatch at once (so the actor is the bottleneck):
//   cpp:     moonseed-actor stepping CartPole-v1 (C++);
//   python:  python3 -m moonseed.actor stepping a numpy CartPole (bench/python_envs.py:cartpole);
//   binding: python3 -m moonseed.actor with envs that do nothing (bench/python_envs.py:idle): what
//            the ctypes binding and the Python loop cost per env step, alone.
// The three alternate in slices, so machine noise hits them alike; each figure is the fastest
// slice, and the ratios to cpp are what compares across machines (docs/performance.md
// "Python actors").
// Usage: actor_bench [seconds per slice = 3] [envs = 16]
#include <signal.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "envs/env.h"
#include "rpc/server.h"
#include "tests/e2e/process.h"

namespace {

namespace rpc = moonseed::rpc;
using Clock = std::chrono::steady_clock;

// Welcomes every actor to a CartPole-v1 run of `envs` envs in 2 groups; answers each batch at
// once, alternating actions 0 and 1 by env so that episodes last; counts env steps.
class CountingLearner : public rpc::ActorService {
 public:
  explicit CountingLearner(uint32_t envs) : envs_(envs) {}

  rpc::Admission on_hello(const rpc::Hello&) override {
    rpc::Admission a;
    a.accepted = true;
    a.welcome.run_id = "actor-bench";
    a.welcome.actor_id = 0;
    a.welcome.env_id = "CartPole-v1";
    a.welcome.env_spec = moonseed::envs::make_env("CartPole-v1")->spec();
    a.welcome.num_envs = envs_;
    a.welcome.num_groups = 2;
    a.welcome.seed = 1;
    return a;
  }
  void on_connect(std::shared_ptr<rpc::ActorLink>) override {}
  void on_steps(const std::shared_ptr<rpc::ActorLink>& link, rpc::StepBatch&& batch) override {
    rpc::ActionBatch reply;
    reply.seq = batch.seq;
    reply.actions.resize(batch.count * sizeof(int32_t));
    for (uint32_t i = 0; i < batch.count; ++i) {
      const int32_t action = static_cast<int32_t>((batch.seq >> 8) + i) & 1;
      std::memcpy(&reply.actions[i * sizeof(int32_t)], &action, sizeof action);
    }
    steps_.fetch_add(batch.count, std::memory_order_relaxed);
    link->send_actions(std::move(reply));
  }
  void on_disconnect(const std::shared_ptr<rpc::ActorLink>&, const std::string&) override {}
  void on_notice(const std::shared_ptr<rpc::ActorLink>&, const rpc::ActorNotice& notice) override {
    std::fprintf(stderr, "actor notice: %s\n", notice.text.c_str());
  }
  uint64_t steps() const { return steps_.load(std::memory_order_relaxed); }

 private:
  uint32_t envs_;
  std::atomic<uint64_t> steps_{0};
};

struct Variant {
  const char* name;
  std::vector<std::string> argv;  // the actor's command line, without --connect
  double best = 0;                // env steps per second, fastest slice
};

std::string python() {
  const char* env = std::getenv("MOONSEED_PYTHON");
  return env && *env ? env : "/usr/bin/python3";
}

}  // namespace

int main(int argc, char** argv) {
  const double seconds = argc > 1 ? std::atof(argv[1]) : 3;
  const uint32_t envs = argc > 2 ? static_cast<uint32_t>(std::atoi(argv[2])) : 16;
  const std::string dir = moonseed::testing::make_temp_dir("moonseed-actor-bench");
  CountingLearner learner(envs);
  rpc::Server server(learner, rpc::ServerOptions{});
  const std::string address = server.listen("unix:" + dir + "/learner.sock").to_string();
  server.start();

  const std::string bin = MOONSEED_BUILD_DIR;
  ::setenv("PYTHONPATH", (bin + "/python:" + MOONSEED_SOURCE_DIR "/bench").c_str(), 1);
  std::vector<Variant> variants = {
      {"cpp", {bin + "/moonseed-actor"}},
      {"python", {python(), "-m", "moonseed.actor", "--env", "python_envs:cartpole"}},
      {"binding", {python(), "-m", "moonseed.actor", "--env", "python_envs:idle"}},
  };
  std::printf("actor_bench: one actor, %u envs in 2 groups, CartPole-v1 spaces, %g s slices\n", envs, seconds);
  for (int slice = 0; slice < 2; ++slice) {
    for (Variant& v : variants) {
      std::vector<std::string> args = v.argv;
      args.insert(args.end(), {"--connect", address});
      moonseed::testing::ChildProcess actor(args, dir + "/" + v.name + ".log");
      // Warm-up: until the actor has stepped for a second (Python's start-up takes longer).
      const uint64_t before_start = learner.steps();
      const auto deadline = Clock::now() + std::chrono::seconds(30);
      while (learner.steps() == before_start && Clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
      std::this_thread::sleep_for(std::chrono::seconds(1));
      const uint64_t begin_steps = learner.steps();
      const auto begin = Clock::now();
      std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
      const double elapsed = std::chrono::duration<double>(Clock::now() - begin).count();
      const double rate = static_cast<double>(learner.steps() - begin_steps) / elapsed;
      if (rate > v.best) v.best = rate;
      actor.signal(SIGTERM);
      if (!actor.wait(10)) std::fprintf(stderr, "%s actor did not stop on SIGTERM\n", v.name);
      if (learner.steps() == before_start) {
        std::fprintf(stderr, "%s: the actor never stepped; its log:\n%s\n", v.name,
                     moonseed::testing::read_file(dir + "/" + v.name + ".log").c_str());
        return 1;
      }
    }
  }
  const double cpp = variants[0].best;
  std::printf("%-8s %14s %10s %16s\n", "actor", "env steps/s", "vs cpp", "us per env step");
  for (const Variant& v : variants) {
    std::printf("%-8s %14.0f %10.3f %16.2f\n", v.name, v.best, v.best / cpp, 1e6 / v.best);
  }
  server.stop();
  std::filesystem::remove_all(dir);
  return 0;
}
