// End-to-end: the real `moonseed` binary, real actor processes, real sockets,
// real files. Each test runs a short CartPole training.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/e2e/process.h"

namespace moonseed::testing {
namespace {

const std::string kBinary = MOONSEED_BINARY;
const std::string kExample = std::string(MOONSEED_SOURCE_DIR) + "/examples/cartpole_vtrace.lua";

// The shipped example with a fast log and no early stop on return.
struct CartpoleRun : TrainingRun {
  CartpoleRun() : TrainingRun(kExample, {"log.interval_s=0.25", "stop.return_mean=0"}) {}
};

// A short run that trains: acting waits when 16 unrolls are queued and 3
// batches of 16 are being prepared or trained, so of 20000 frames (64 envs,
// unrolls of 20) all but about 3000 have been trained on: dozens of
// optimizer steps, however the machine is loaded.
const std::string kShortRun = "stop.frames=20000";

TEST(EndToEnd, ARunTrainsThroughActorProcessesAndWritesItsRunDirectory) {
  CartpoleRun run;
  ChildProcess learner(run.args({kShortRun}), run.log);
  std::optional<int> code = learner.wait(90);
  ASSERT_TRUE(code.has_value()) << read_file(run.log);
  EXPECT_EQ(*code, 0) << read_file(run.log);
  ASSERT_FALSE(run.run_dir().empty());
  const std::string dir = run.run_dir();
  EXPECT_TRUE(std::filesystem::exists(dir + "/config.lua"));
  auto rows = run.metrics();
  ASSERT_GE(rows.size(), 3u) << read_file(run.log);
  EXPECT_GT(last(rows, "frames"), 1000);
  EXPECT_GT(last(rows, "optimizer_steps"), 0);
  EXPECT_GT(last(rows, "episodes"), 0);
  EXPECT_GE(last(rows, "return_mean"), 8);  // CartPole episodes last at least 8 steps
  for (const char* key : {"time_s", "fps", "loss_total", "loss_policy", "loss_baseline", "loss_entropy"}) {
    EXPECT_TRUE(rows.back().count(key)) << key;
  }
  // Counters never go back (event rows, such as an actor joining, carry none).
  double frames = 0;
  for (const MetricsRow& row : rows) {
    if (!row.count("frames")) continue;
    EXPECT_GE(row.at("frames"), frames);
    frames = row.at("frames");
  }
  // One checkpoint, the final one, and its manifest.
  std::vector<std::string> ckpts;
  for (const auto& e : std::filesystem::directory_iterator(dir + "/checkpoints")) ckpts.push_back(e.path());
  std::sort(ckpts.begin(), ckpts.end());
  ASSERT_EQ(ckpts.size(), 2u) << ::testing::PrintToString(ckpts);
  EXPECT_EQ(ckpts[1], ckpts[0] + ".sum");
  // Actors ended on the learner's Bye, not by being killed.
  EXPECT_NE(read_file(dir + "/actors/actor-0.log").find("bye"), std::string::npos);
  // The final weights played stop.final_eval_episodes (10) episodes: in the stop row and the summary.
  ASSERT_TRUE(rows.back().count("final_eval_return_mean")) << read_file(run.log);
  EXPECT_EQ(rows.back().at("final_eval_episodes"), 10);
  EXPECT_GE(rows.back().at("final_eval_return_mean"), 8);
  EXPECT_NE(read_file(run.log).find("moonseed: final policy: return_mean "), std::string::npos) << read_file(run.log);
  EXPECT_NE(read_file(run.log).find(" over 10 evaluation episodes (sampled; min "), std::string::npos)
      << read_file(run.log);
}

TEST(EndToEnd, AContinuousActionEnvTrainsWithAGaussianPolicy) {
  CartpoleRun run;
  // 16 envs: every one ends an episode (200 steps) by 3200 frames, and at most
  // about 1600 frames wait untrained.
  ChildProcess learner(run.args({"stop.frames=10000", "env.id=\"Pendulum-v1\"", "topology.envs_per_actor=8",
                                 "stop.final_eval_episodes=3"}),
                       run.log);
  ASSERT_EQ(learner.wait(90), std::optional<int>(0)) << read_file(run.log);
  auto rows = run.metrics();
  EXPECT_GT(last(rows, "optimizer_steps"), 0) << read_file(run.log);
  // Pendulum episodes are cut at 200 steps and every reward is <= 0.
  EXPECT_GT(last(rows, "episodes"), 0);
  EXPECT_EQ(last(rows, "length_mean"), 200);
  ASSERT_TRUE(rows.back().count("return_mean"));
  EXPECT_LT(rows.back().at("return_mean"), 0);
  // Three evaluation episodes of the final weights, each cut at 200 steps too.
  EXPECT_EQ(rows.back().at("final_eval_episodes"), 3) << read_file(run.log);
  EXPECT_LT(rows.back().at("final_eval_return_mean"), 0);
  EXPECT_NE(read_file(run.log).find(" over 3 evaluation episodes (sampled; "), std::string::npos) << read_file(run.log);
}

TEST(EndToEnd, ResumeContinuesCountersFromTheNewestCheckpoint) {
  CartpoleRun run;
  ChildProcess first(run.args({kShortRun}), run.log);
  ASSERT_EQ(first.wait(90), std::optional<int>(0)) << read_file(run.log);
  const double steps_before = last(run.metrics(), "optimizer_steps");
  ASSERT_GT(steps_before, 0);

  ChildProcess second({kBinary, "run", "--resume", run.run_dir(), frames_past_last_row(run, 20000),
                       "log.interval_s=0.25", "stop.final_eval_episodes=0"},
                      run.log);
  ASSERT_EQ(second.wait(90), std::optional<int>(0)) << read_file(run.log);
  auto rows = run.metrics();
  EXPECT_GT(last(rows, "optimizer_steps"), steps_before);
  EXPECT_NE(read_file(run.log).find("resumed"), std::string::npos);
  // stop.final_eval_episodes = 0: the second run's stop row and summary have no final evaluation.
  EXPECT_FALSE(rows.back().count("final_eval_return_mean"));
  const std::string log = read_file(run.log);
  EXPECT_EQ(log.find("final policy:", log.find("resumed")), std::string::npos) << log;
}

// A learner killed before its first checkpoint (checkpoint.interval_s = 0: only at the end)
// left nothing to resume: --resume starts the run over from step 0 in its own directory,
// says so, and marks it with a resume row of no checkpoint at 0, instead of failing a
// requeued job.
TEST(EndToEnd, AResumeOfARunKilledBeforeItsFirstCheckpointStartsOverFromStepZero) {
  CartpoleRun run;
  ChildProcess first(run.args({kUntilStopped, "checkpoint.interval_s=0"}), run.log);
  ASSERT_TRUE(eventually(60, [&] { return !run.run_dir().empty() && last(run.metrics(), "frames") > 2000; }))
      << read_file(run.log);
  first.signal(SIGKILL);
  ASSERT_EQ(first.wait(30), std::optional<int>(128 + SIGKILL));
  ASSERT_TRUE(std::filesystem::is_empty(run.run_dir() + "/checkpoints")) << "killed before any checkpoint";

  ChildProcess second({kBinary, "run", "--resume", run.run_dir(), "stop.frames=20000", "log.interval_s=0.25"}, run.log);
  ASSERT_EQ(second.wait(90), std::optional<int>(0)) << read_file(run.log);
  EXPECT_NE(read_file(run.log).find("moonseed: " + run.run_dir() +
                                    " has no checkpoint (the run ended before its first one was written): it "
                                    "starts again from step 0"),
            std::string::npos)
      << read_file(run.log);
  const std::vector<MetricsRow> resumes = read_events(run.run_dir() + "/metrics.jsonl", "resume");
  ASSERT_EQ(resumes.size(), 1u);
  EXPECT_EQ(resumes[0].at("frames"), 0);
  EXPECT_EQ(resumes[0].at("optimizer_steps"), 0);
  const std::vector<MetricsRow> stops = read_events(run.run_dir() + "/metrics.jsonl", "stop");
  ASSERT_EQ(stops.size(), 1u);
  EXPECT_GE(stops[0].at("frames"), 20000);
  EXPECT_FALSE(std::filesystem::is_empty(run.run_dir() + "/checkpoints")) << "the final checkpoint";
}

TEST(EndToEnd, SigintSavesACheckpointAndExitsCleanly) {
  CartpoleRun run;
  ChildProcess learner(run.args({kUntilStopped}), run.log);
  ASSERT_TRUE(eventually(60, [&] { return !run.run_dir().empty() && last(run.metrics(), "optimizer_steps") > 0; }))
      << read_file(run.log);
  learner.signal(SIGINT);
  std::optional<int> code = learner.wait(60);
  ASSERT_TRUE(code.has_value());
  EXPECT_EQ(*code, 0) << read_file(run.log);
  EXPECT_NE(read_file(run.log).find("interrupted (SIGINT)"), std::string::npos);
  EXPECT_FALSE(std::filesystem::is_empty(run.run_dir() + "/checkpoints"));
  // A user who stops the run wants out: no final evaluation.
  EXPECT_EQ(read_file(run.log).find("final policy:"), std::string::npos) << read_file(run.log);
  EXPECT_FALSE(run.metrics().back().count("final_eval_return_mean"));
}

TEST(EndToEnd, AKilledActorIsRestartedAndTrainingGoesOn) {
  CartpoleRun run;
  ChildProcess learner(run.args({kUntilStopped}), run.log);
  ASSERT_TRUE(eventually(60, [&] { return !run.run_dir().empty() && last(run.metrics(), "actors") == 2; }))
      << read_file(run.log);
  const std::string pid_file = run.run_dir() + "/actors/actor-0.pid";
  const pid_t victim = std::stoi(read_file(pid_file));
  ASSERT_EQ(::kill(victim, SIGKILL), 0);

  // The learner notices, keeps training on the other actor, and the restarted
  // actor rejoins.
  ASSERT_TRUE(eventually(60, [&] { return last(run.metrics(), "actor_restarts") >= 1; })) << read_file(run.log);
  const double frames_after_kill = last(run.metrics(), "frames");
  const double steps_after_kill = last(run.metrics(), "optimizer_steps");
  EXPECT_TRUE(eventually(60, [&] {
    auto rows = run.metrics();
    return last(rows, "actors") == 2 && last(rows, "frames") > frames_after_kill &&
           last(rows, "optimizer_steps") > steps_after_kill;
  })) << read_file(run.log);
  EXPECT_NE(std::stoi(read_file(pid_file)), victim);
  learner.signal(SIGTERM);
  EXPECT_EQ(learner.wait(60), std::optional<int>(0)) << read_file(run.log);
}

TEST(EndToEnd, ARemoteActorJoinsOverTcp) {
  CartpoleRun run;
  ChildProcess learner(run.args({kUntilStopped, "topology.transport=\"tcp\"", "topology.local_actors=1"}),
                       run.log);
  const std::string address = run.address_once_connected(1, 60);
  ASSERT_FALSE(address.empty()) << read_file(run.log);
  ASSERT_EQ(address.rfind("tcp:", 0), 0u) << address;

  ChildProcess remote({kBinary, "actor", "--connect", address}, run.runs_dir + "/remote.log");
  EXPECT_TRUE(eventually(60, [&] { return last(run.metrics(), "actors") == 2; }))
      << read_file(run.log) << read_file(run.runs_dir + "/remote.log");
  learner.signal(SIGTERM);
  EXPECT_EQ(learner.wait(60), std::optional<int>(0)) << read_file(run.log);
  // The remote actor was told Bye and exited by itself.
  EXPECT_EQ(remote.wait(30), std::optional<int>(0)) << read_file(run.runs_dir + "/remote.log");
}

TEST(EndToEnd, AnActorReconnectsWhenItsLearnerComesBack) {
  CartpoleRun first_run, second_run;
  const std::string socket = first_run.runs_dir + "/learner.sock";
  const std::vector<std::string> fixed = {kUntilStopped, "topology.local_actors=0",
                                          "topology.actors=1", "topology.listen=\"unix:" + socket + "\""};
  auto learner = std::make_unique<ChildProcess>(first_run.args(fixed), first_run.log);
  ASSERT_TRUE(eventually(60, [&] { return std::filesystem::exists(socket); })) << read_file(first_run.log);
  ChildProcess actor({kBinary, "actor", "--connect", "unix:" + socket, "--reconnect-for", "60"},
                     first_run.runs_dir + "/actor.log");
  ASSERT_TRUE(eventually(60, [&] { return last(first_run.metrics(), "frames") > 0; })) << read_file(first_run.log);

  // The learner dies without a word; the actor keeps trying.
  learner->signal(SIGKILL);
  learner->wait(30);
  learner.reset();
  EXPECT_TRUE(actor.running());

  ChildProcess second(second_run.args(fixed), second_run.log);
  EXPECT_TRUE(eventually(60, [&] {
    return !second_run.run_dir().empty() && last(second_run.metrics(), "frames") > 0;
  })) << read_file(second_run.log) << read_file(first_run.runs_dir + "/actor.log");
  EXPECT_TRUE(actor.running());
  second.signal(SIGTERM);
  EXPECT_EQ(second.wait(60), std::optional<int>(0)) << read_file(second_run.log);
  EXPECT_EQ(actor.wait(30), std::optional<int>(0)) << read_file(first_run.runs_dir + "/actor.log");
}

// Two `moonseed run --resume D` at once: the second is refused before it touches D (it used to
// rewrite config.lua and learner.address and append a resume row to the live run's metrics).
TEST(EndToEnd, ASecondRunInALiveRunDirectoryIsRefusedBeforeItWritesThere) {
  CartpoleRun run;
  ChildProcess learner(run.args({kUntilStopped, "checkpoint.interval_s=1"}), run.log);
  ASSERT_TRUE(eventually(60, [&] {
    return !run.run_dir().empty() && last(run.metrics(), "frames") > 0 &&
           !read_file(run.run_dir() + "/learner.address").empty();
  })) << read_file(run.log);
  const std::string dir = run.run_dir();
  const std::string config = read_file(dir + "/config.lua");
  const std::string address = read_file(dir + "/learner.address");
  const Finished second = run_to_end({kBinary, "run", "--resume", dir, "stop.frames=1"}, run.runs_dir + "/second.log", 60);
  EXPECT_EQ(second.exit_code, std::optional<int>(1)) << second.output;
  EXPECT_NE(second.output.find(dir + " is in use: another `moonseed run` is running in it"), std::string::npos)
      << second.output;
  EXPECT_EQ(read_file(dir + "/config.lua"), config);
  EXPECT_EQ(read_file(dir + "/learner.address"), address);
  EXPECT_TRUE(read_events(dir + "/metrics.jsonl", "resume").empty());
  EXPECT_TRUE(learner.running());
  learner.signal(SIGTERM);
  ASSERT_EQ(learner.wait(60), std::optional<int>(0)) << read_file(run.log);
  // Once the run has ended (its lock goes with its process) the directory can be resumed.
  const Finished resumed = run_to_end({kBinary, "run", "--resume", dir, frames_past_last_row(run, 2000)},
                                      run.runs_dir + "/resumed.log", 120);
  EXPECT_EQ(resumed.exit_code, std::optional<int>(0)) << resumed.output;
  EXPECT_EQ(read_events(dir + "/metrics.jsonl", "resume").size(), 1u);
}

TEST(EndToEnd, ABrokenScriptFailsWithFileAndLineBeforeAnythingStarts) {
  CartpoleRun run;
  const std::string script = run.runs_dir + "/broken.lua";
  {
    std::FILE* f = std::fopen(script.c_str(), "w");
    std::fputs("return {\n  name = \"broken\",\n  optimizr = { lr = 1e-3 },\n}\n", f);
    std::fclose(f);
  }
  ChildProcess learner({kBinary, "run", script, "runs_dir=" + run.runs_dir}, run.log);
  std::optional<int> code = learner.wait(30);
  ASSERT_TRUE(code.has_value());
  EXPECT_NE(*code, 0);
  const std::string out = read_file(run.log);
  EXPECT_NE(out.find("broken.lua:3"), std::string::npos) << out;
  EXPECT_NE(out.find("optimizer"), std::string::npos) << out;  // the suggestion
  EXPECT_TRUE(run.run_dir().empty());  // no run directory was created
}

}  // namespace
}  // namespace moonseed::testing
