// Envs that fail again and again, for real, in `moonseed run` (docs/reliability.md "Actors that
// die", "Hung actors"): the probe plugin (tests/envs/plugins/probe_plugin.c) segfaults, hangs or
// calls exit(0) at a chosen step of every actor process. Each slot restarts, backs off and is
// parked with a line that names the plugin and the failure; with every slot parked the run stops
// with exit code 1 and says why; the logs stay short. stop.wall_seconds ends a run whose actors
// hang, where stop.seconds (training time) would never be reached. An env that leaks is killed for
// memory, by the run (topology.actor_memory_mb) or by the kernel (in a memory cgroup the test
// makes; root), and the line says so.
//
// Small policy numbers keep each test to seconds: topology.actor_deaths_to_park = 4 (2 restarts at
// once, 1 after a backoff, the fourth death parks) and topology.actor_max_backoff_s = 1.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/e2e/process.h"
#include "tests/memory_cgroup.h"

namespace moonseed::testing {
namespace {

const std::string kCatchScript = std::string(MOONSEED_SOURCE_DIR) + "/examples/plugin_env/catch.lua";
const std::string kProbe = MOONSEED_PROBE_PLUGIN;

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// The Catch script on the probe plugin with these env options and the small policy.
struct FailingRun : TrainingRun {
  FailingRun(const std::string& options, const std::string& prefix)
      : TrainingRun(kCatchScript,
                    {"log.interval_s=0.2", "stop.return_mean=0", "env.plugin=\"" + kProbe + "\"",
                     "env.id=\"Probe-v0\"", "env.options=" + options, "topology.envs_per_actor=4",
                     "topology.actor_deaths_to_park=4", "topology.actor_max_backoff_s=1"},
                    prefix) {}
  std::vector<MetricsRow> events(const std::string& name) const {
    return read_events(run_dir() + "/metrics.jsonl", name);
  }
  // What every line about actor `id` starts with: its id and env.
  std::string actor(int id) const {
    return "actor " + std::to_string(id) + " (plugin " + kProbe + " (env Probe-v0), pid ";
  }
};

// The run stopped by itself because nothing could run: exit 1, the reason, both slots parked, a
// bounded number of restarts, and short logs.
void expect_stopped_with_every_slot_parked(const FailingRun& run, const std::optional<int>& code) {
  const std::string log = read_file(run.log);
  ASSERT_TRUE(code.has_value()) << "the run never ended\n" << log;
  EXPECT_EQ(*code, 1) << log;
  EXPECT_TRUE(contains(log, "stopped: no actor can run: every local actor slot is parked after repeated failures "
                            "of plugin " + kProbe + " (env Probe-v0)"))
      << log;
  EXPECT_EQ(run.events("actor_parked").size(), 2u) << log;
  const std::vector<MetricsRow> rows = run.metrics();
  EXPECT_EQ(last(rows, "actors_parked"), 2) << log;
  EXPECT_TRUE(contains(log, "actors 0/2 (0 backing off, 2 parked")) << "the progress line\n" << log;
  EXPECT_LE(last(rows, "actor_restarts"), 8) << "at most 4 deaths per slot, the last one parks";
  EXPECT_LT(std::filesystem::file_size(run.log), 64u << 10) << log;
  EXPECT_LT(rows.size(), 1000u);
  for (int id = 0; id < 2; ++id) {
    EXPECT_LT(std::filesystem::file_size(run.run_dir() + "/actors/actor-" + std::to_string(id) + ".log"), 256u << 10);
  }
}

TEST(FailingEnv, APluginThatSegfaultsAfterWorkingBacksOffIsParkedAndTheRunExitsSayingWhy) {
  // Every actor process makes progress (300 env steps), then dies of SIGSEGV.
  FailingRun run("{crash_at_step=300}", "moonseed-segv-loop");
  ChildProcess learner(run.args({kUntilStopped}), run.log);
  const std::optional<int> code = learner.wait(180);
  expect_stopped_with_every_slot_parked(run, code);
  const std::string log = read_file(run.log);
  EXPECT_TRUE(contains(log, run.actor(0))) << log;
  EXPECT_TRUE(contains(log, ") crashed (SIGSEGV, Segmentation fault); restarting now")) << "the first, in full\n" << log;
  EXPECT_TRUE(contains(log, ") crashed (SIGSEGV, Segmentation fault) (3 deaths in 600 s, parked at 4); restarting in 1 s"))
      << log;
  EXPECT_TRUE(contains(log, ") crashed (SIGSEGV, Segmentation fault), 4 deaths in 600 s: not restarting it; the end of"))
      << log;
  EXPECT_GT(last(run.metrics(), "frames"), 0) << "it worked in between";
}

TEST(FailingEnv, APluginThatHangsIsKilledAsHungEachTimeAndParked) {
  // Every actor process makes progress, then never returns from a step.
  FailingRun run("{hang_at_step=200}", "moonseed-hang-loop");
  ChildProcess learner(run.args({kUntilStopped, "topology.actor_timeout_s=1"}), run.log);
  const std::optional<int> code = learner.wait(180);
  expect_stopped_with_every_slot_parked(run, code);
  const std::string log = read_file(run.log);
  EXPECT_TRUE(contains(log, run.actor(1))) << log;
  EXPECT_TRUE(contains(log, ") hung: no step batch for ")) << log;
  EXPECT_TRUE(contains(log, "4 deaths in 600 s: not restarting it")) << log;
  EXPECT_GE(run.events("actor_hung").size(), 8u) << "each death was a hang the run found";
}

TEST(FailingEnv, APluginThatExitsOnItsFirstStepIsParkedAsAnEarlyDeath) {
  // The reset batch goes out, then the first step ends the process with exit(0): no progress.
  FailingRun run("{exit_at_step=1}", "moonseed-exit0-loop");
  ChildProcess learner(run.args({kUntilStopped, "topology.actor_deaths_to_park=0"}), run.log);
  const std::optional<int> code = learner.wait(180);
  const std::string log = read_file(run.log);
  ASSERT_TRUE(code.has_value()) << "the run never ended\n" << log;
  EXPECT_EQ(*code, 1) << log;
  EXPECT_TRUE(contains(log, run.actor(0))) << log;
  EXPECT_TRUE(contains(log, ") exited on its own with code 0 before its first env step, 5 times in a row: not "
                            "restarting it"))
      << log;
  EXPECT_EQ(last(run.metrics(), "actor_restarts"), 8) << "4 restarts per slot, 1 s apart";
  EXPECT_EQ(last(run.metrics(), "frames"), 0);
  EXPECT_LT(std::filesystem::file_size(run.log), 64u << 10) << log;
}

TEST(FailingEnv, WallSecondsEndAHungRunThatStopSecondsNeverWould) {
  // The actors hang long before they have sent the 6400 steps of a first training batch, so
  // training time (from the first batch on) never starts; the wall clock does.
  FailingRun run("{hang_at_step=200}", "moonseed-wall");
  ChildProcess learner(run.args({kUntilStopped, "topology.actor_timeout_s=1", "topology.actor_deaths_to_park=0",
                                 "learner.batch=64", "learner.unroll=100", "learner.queue_capacity=128",
                                 "stop.seconds=1", "stop.wall_seconds=6"}),
                       run.log);
  const std::optional<int> code = learner.wait(120);
  const std::string log = read_file(run.log);
  ASSERT_TRUE(code.has_value()) << "the run never ended\n" << log;
  EXPECT_EQ(*code, 0) << log;
  EXPECT_TRUE(contains(log, "stopped: reached stop.wall_seconds = 6 (0 s of it training)")) << log;
  const std::vector<MetricsRow> stop = run.events("stop");
  ASSERT_EQ(stop.size(), 1u);
  EXPECT_GE(stop[0].at("time_s"), 6);
  EXPECT_EQ(stop[0].at("train_time_s"), 0) << "stop.seconds = 1 was never reached";
  EXPECT_GE(run.events("actor_hung").size(), 1u);
}

TEST(FailingEnv, AnActorOverTopologyActorMemoryMbIsKilledForMemoryAndSaidToBe) {
  // Every step of an actor process keeps 1 MiB more: over 200 MiB within a fraction of a second.
  FailingRun run("{leak_mb_per_step=1}", "moonseed-memory-limit");
  ChildProcess learner(run.args({kUntilStopped, "topology.actor_memory_mb=200"}), run.log);
  const std::optional<int> code = learner.wait(180);
  expect_stopped_with_every_slot_parked(run, code);
  const std::string log = read_file(run.log);
  EXPECT_TRUE(contains(log, run.actor(0))) << log;
  EXPECT_TRUE(contains(log, ") killed for memory: its processes held ")) << log;
  EXPECT_TRUE(contains(log, ", over topology.actor_memory_mb = 200")) << log;
}

TEST(FailingEnv, WhenMemoryRunsOutTheKernelKillsActorsNotTheLearnerAndTheRunSaysSo) {
  // The whole run in a memory cgroup of 1.5 GiB, actors that keep 4 MiB more at every step: memory
  // runs out again and again. The kernel must choose actors (their oom_score_adj is above the
  // learner's), each death must be said to be the OOM killer's, and the learner must live to stop
  // the run by its own rule.
  MemoryCgroup cgroup;
  if (!cgroup.make("moonseed-e2e-oom", int64_t{1536} << 20)) GTEST_SKIP() << cgroup.error();
  FailingRun run("{leak_mb_per_step=4}", "moonseed-oom");
  std::vector<std::string> argv = {"/bin/sh", "-c", "echo $$ > " + cgroup.procs_file() + " && exec \"$0\" \"$@\""};
  for (const std::string& a : run.args({kUntilStopped})) argv.push_back(a);
  ChildProcess learner(argv, run.log);
  const std::optional<int> code = learner.wait(300);
  const std::string log = read_file(run.log);
  ASSERT_TRUE(code.has_value()) << "the run never ended\n" << log;
  EXPECT_EQ(*code, 1) << "the learner stopped the run itself (a learner killed by the kernel exits 137)\n" << log;
  EXPECT_TRUE(contains(log, ") killed for memory: the kernel's OOM killer ended it")) << log;
  EXPECT_TRUE(contains(log, "stopped: no actor can run")) << log;
}

}  // namespace
}  // namespace moonseed::testing
