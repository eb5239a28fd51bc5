// C env plugins in real runs (docs/env-plugins.md): `moonseed run` trains the shipped Catch
// example built by the project's CMake; a plugin that crashes kills only its actor; a step
// that fails reaches the learner's log as a notice; an actor whose plugin makes another spec
// than the learner's says why in the learner's log.
#include <signal.h>
#include <stdlib.h>

#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/e2e/process.h"

namespace moonseed::testing {
namespace {

const std::string kBinary = MOONSEED_BINARY;
const std::string kCatchScript = std::string(MOONSEED_SOURCE_DIR) + "/examples/plugin_env/catch.lua";
const std::string kCatch = MOONSEED_CATCH_PLUGIN;
const std::string kProbe = MOONSEED_PROBE_PLUGIN;

std::string plugin_override(const std::string& path) { return "env.plugin=\"" + path + "\""; }

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// The Catch script on the probe plugin (tests/envs/plugins/probe_plugin.c) with these options.
struct ProbeRun : TrainingRun {
  explicit ProbeRun(const std::string& options, const std::string& prefix)
      : TrainingRun(kCatchScript,
                    {"log.interval_s=0.2", "stop.return_mean=0", plugin_override(kProbe), "env.id=\"Probe-v0\"",
                     "env.options=" + options, "topology.envs_per_actor=4"},
                    prefix) {}
};

TEST(PluginEnvRun, TheCatchExampleTrainsFarAboveRandom) {
  // Random play scores about -0.6; the run stops as soon as the mean return passes 0.5.
  TrainingRun run(kCatchScript, {"log.interval_s=0.5", plugin_override(kCatch), "stop.return_mean=0.5",
                                 "stop.frames=3000000"},
                  "moonseed-catch");
  ChildProcess learner(run.args({}), run.log);
  ASSERT_EQ(learner.wait(240), std::optional<int>(0)) << read_file(run.log);
  // It stopped on the return rule; the final row counts the episodes that ended while the run
  // stopped too, so it may sit a little under the bound, still far above random.
  EXPECT_TRUE(contains(read_file(run.log), "stopped: return_mean")) << read_file(run.log);
  const std::vector<MetricsRow> rows = run.metrics();
  EXPECT_GE(last(rows, "return_mean"), 0.3) << read_file(run.log);
  EXPECT_LT(last(rows, "frames"), 3000000) << "stopped on frames, not on the return";
}

TEST(PluginEnvRun, APluginThatCrashesKillsOnlyItsActorAndTheRestartedOneRejoins) {
  // Every actor process dies of SIGSEGV at its 400th env step; the run needs several lives of
  // both (fewer than the deaths that would park a slot, topology.actor_deaths_to_park).
  ProbeRun run("{crash_at_step=400, max_episode_steps=20}", "moonseed-crash");
  ChildProcess learner(run.args({"stop.frames=3000"}), run.log);
  ASSERT_EQ(learner.wait(180), std::optional<int>(0)) << read_file(run.log);
  const std::string log = read_file(run.log);
  EXPECT_TRUE(contains(log, "(plugin " + kProbe + " (env Probe-v0), pid ")) << log;
  EXPECT_TRUE(contains(log, ") crashed (SIGSEGV, Segmentation fault); restarting now")) << log;
  const std::vector<MetricsRow> rows = run.metrics();
  EXPECT_GE(last(rows, "actor_restarts"), 4) << log;
  EXPECT_GE(last(rows, "frames"), 3000);
  EXPECT_GT(last(rows, "optimizer_steps"), 0);
  // Each restart rejoined: one join per life.
  EXPECT_GE(read_events(run.run_dir() + "/metrics.jsonl", "actor_joined").size(), 6u) << log;
}

TEST(PluginEnvRun, AStepThatFailsEndsItsEpisodeAsTruncatedAndTheLearnerLogsWhy) {
  ProbeRun run("{fail_step_every=30}", "moonseed-stepfail");
  ChildProcess learner(run.args({"stop.frames=3000"}), run.log);
  ASSERT_EQ(learner.wait(120), std::optional<int>(0)) << read_file(run.log);
  const std::string log = read_file(run.log);
  EXPECT_TRUE(contains(log, ": step failed: plugin " + kProbe +
                                ": step failed: step 30 failed on purpose (its episode ends as truncated; the env resets)"))
      << log;
  EXPECT_FALSE(read_events(run.run_dir() + "/metrics.jsonl", "actor_notice").empty());
  // Every episode is cut by its failing 30th step.
  EXPECT_EQ(last(run.metrics(), "length_mean"), 30) << log;
}

TEST(PluginEnvRun, AnActorWhosePluginMakesAnotherSpecSaysWhyInTheLearnersLogAndEvaluateRefusesAPlugin) {
  ProbeRun run("{max_episode_steps=20}", "moonseed-spec");
  ChildProcess learner(run.args({kUntilStopped, "topology.local_actors=1"}), run.log);
  const std::string address = run.address_once_connected(1, 60);
  ASSERT_FALSE(address.empty()) << read_file(run.log);
  // The probe reads $PROBE_OBS_SIZE in create(): this actor makes observations of 6, not 4.
  ::setenv("PROBE_OBS_SIZE", "6", 1);
  const std::string remote_log = run.runs_dir + "/remote.log";
  ChildProcess remote({kBinary, "actor", "--connect", address}, remote_log);
  ::unsetenv("PROBE_OBS_SIZE");
  EXPECT_EQ(remote.wait(60), std::optional<int>(1)) << read_file(remote_log);
  EXPECT_TRUE(eventually(30, [&] {
    return contains(read_file(run.log), "actor said bye: env spec mismatch: this actor builds Probe-v0 obs=box f32[6]");
  })) << read_file(run.log);
  EXPECT_TRUE(contains(read_file(remote_log), "but the learner expects Probe-v0 obs=box f32[4]")) << read_file(remote_log);
  // Evaluation runs envs in the learner's process, which never loads a plugin: refused, and the run goes on.
  const std::string ctl_log = run.runs_dir + "/ctl.log";
  ChildProcess ctl({kBinary, "ctl", run.run_dir(), "evaluate", "2"}, ctl_log);
  EXPECT_NE(ctl.wait(60), std::optional<int>(0));
  EXPECT_TRUE(contains(read_file(ctl_log), "evaluate: runs envs in the learner's process, which never loads a plugin"))
      << read_file(ctl_log);
  EXPECT_TRUE(learner.running());
  learner.signal(SIGTERM);
  EXPECT_EQ(learner.wait(60), std::optional<int>(0)) << read_file(run.log);
}

}  // namespace
}  // namespace moonseed::testing
