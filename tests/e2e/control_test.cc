// `moonseed ctl` against a real `moonseed run`: every command of the control
// socket, through the binary, as a shell script would use it.
#include <signal.h>

#include <chrono>
#include <filesystem>
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

struct CtlResult {
  int code = -1;
  std::string output;  // stdout and stderr
};

class ControlRun : public ::testing::Test {
 protected:
  void SetUp() override { start(kExample); }
  void start(const std::string& script) {
    learner_.emplace(std::vector<std::string>{kBinary, "run", script, "runs_dir=" + dir_ + "/runs",
                                              "log.interval_s=0.25", "stop.return_mean=0", "stop.seconds=0",
                                              kUntilStopped,
                                              "--no-watch"},
                     log_);
    ASSERT_TRUE(eventually(60, [&] { return !run_dir().empty() && std::filesystem::exists(run_dir() + "/control.address"); }))
        << read_file(log_);
  }
  std::string run_dir() const {
    auto dirs = list_dirs(dir_ + "/runs");
    return dirs.size() == 1 ? dirs[0] : std::string();
  }
  CtlResult ctl(const std::vector<std::string>& args) {
    const std::string out = dir_ + "/ctl-" + std::to_string(++calls_) + ".log";
    std::vector<std::string> argv = {kBinary, "ctl", run_dir()};
    argv.insert(argv.end(), args.begin(), args.end());
    ChildProcess p(argv, out);
    CtlResult r;
    r.code = p.wait(120).value_or(-1);
    r.output = read_file(out);
    return r;
  }
  // A number printed by `ctl -e EXPR`.
  double number(const std::string& expr) {
    CtlResult r = ctl({"-e", expr});
    EXPECT_EQ(r.code, 0) << r.output;
    try {
      return std::stod(r.output);
    } catch (const std::exception&) {
      ADD_FAILURE() << expr << " printed: " << r.output;
      return -1;
    }
  }
  double steps() { return number("run:status().optimizer_steps"); }
  bool logged(const std::string& text) const { return read_file(log_).find(text) != std::string::npos; }

  std::string dir_ = make_temp_dir("moonseed-ctl");
  std::string log_ = dir_ + "/learner.log";
  std::optional<ChildProcess> learner_;
  int calls_ = 0;
};

TEST_F(ControlRun, StatusReportsTheLiveCounters) {
  ASSERT_TRUE(eventually(60, [&] { return steps() > 0; })) << read_file(log_);
  CtlResult r = ctl({"status"});
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("\"env\": \"CartPole-v1\""), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("\"paused\": false"), std::string::npos) << r.output;
  // Each of the example's two local actors, by id, with the frames it sent.
  const std::vector<ListedActor> actors = listed_actors(r.output);
  ASSERT_EQ(actors.size(), 2u) << r.output;
  for (int id = 0; id < 2; ++id) {
    EXPECT_EQ(actors[id].id, id) << r.output;
    EXPECT_TRUE(actors[id].connected) << r.output;
    EXPECT_GT(actors[id].frames, 0) << r.output;
    EXPECT_GT(actors[id].pid, 0) << r.output;
    EXPECT_EQ(actors[id].pid, std::stod(read_file(run_dir() + "/actors/actor-" + std::to_string(id) + ".pid")));
    EXPECT_EQ(actors[id].connections, 1) << r.output;
  }
  EXPECT_NE(r.output.find("\"actors_not_listed\": 0"), std::string::npos) << r.output;
  EXPECT_EQ(ctl({"get", "optimizer.lr"}).output, "0.001\n");
  CtlResult unknown = ctl({"get", "optimizer.lrr"});
  EXPECT_EQ(unknown.code, 1);
  EXPECT_NE(unknown.output.find("did you mean 'optimizer.lr'"), std::string::npos) << unknown.output;
  learner_->signal(SIGINT);
  EXPECT_EQ(learner_->wait(60), std::optional<int>(0));
}

TEST_F(ControlRun, SetAppliesAHotFieldAndRefusesARestartOnlyOne) {
  CtlResult set = ctl({"set", "optimizer.lr", "2.5e-4"});
  EXPECT_EQ(set.code, 0) << set.output;
  EXPECT_NE(set.output.find("\"config_version\": 1"), std::string::npos) << set.output;
  EXPECT_TRUE(eventually(30, [&] { return number("run:status().learning_rate") == 2.5e-4; }));
  EXPECT_EQ(ctl({"get", "optimizer.lr"}).output, "0.00025\n");

  CtlResult refused = ctl({"set", "model.hidden", "32"});
  EXPECT_EQ(refused.code, 1);
  EXPECT_NE(refused.output.find("restart-only field changed: model.hidden"), std::string::npos) << refused.output;
  CtlResult invalid = ctl({"set", "optimizer.lr", "7"});
  EXPECT_EQ(invalid.code, 1);
  EXPECT_NE(invalid.output.find("expected a number in (0, 1], got 7"), std::string::npos) << invalid.output;
  EXPECT_EQ(number("run:status().config_version"), 1);
  // The set value is what the run directory's config now says.
  EXPECT_NE(read_file(run_dir() + "/config.lua").find("lr = 0.00025"), std::string::npos);
  EXPECT_EQ(ctl({"stop"}).code, 0);
  EXPECT_EQ(learner_->wait(60), std::optional<int>(0)) << read_file(log_);
}

TEST_F(ControlRun, AFieldOfTheOtherAlgorithmIsRefusedFromCtlAndTheConsole) {
  const std::string refusal =
      "r2d2.batch is a field of algo \"r2d2\", and this run's algo is \"vtrace\", which does not use it";
  CtlResult set = ctl({"set", "r2d2.batch", "32"});
  EXPECT_EQ(set.code, 1);
  EXPECT_NE(set.output.find("reload refused (control), nothing changed: " + refusal), std::string::npos)
      << set.output;
  // The console's run:set sends the same request; its error carries the same words.
  CtlResult console = ctl({"-e", "run:set('r2d2.batch', 64)"});
  EXPECT_EQ(console.code, 1);
  EXPECT_NE(console.output.find(refusal), std::string::npos) << console.output;
  EXPECT_EQ(number("run:status().config_version"), 0);
  EXPECT_EQ(read_file(run_dir() + "/config.lua").find("batch = 32"), std::string::npos);
  EXPECT_EQ(ctl({"stop"}).code, 0);
  EXPECT_EQ(learner_->wait(60), std::optional<int>(0)) << read_file(log_);
}

// The same run of examples/cartpole_r2d2.lua.
class R2d2ControlRun : public ControlRun {
 protected:
  void SetUp() override { start(std::string(MOONSEED_SOURCE_DIR) + "/examples/cartpole_r2d2.lua"); }
};

TEST_F(R2d2ControlRun, AVtraceFieldIsRefusedNamingTheRunsAlgo) {
  CtlResult set = ctl({"set", "vtrace.entropy_cost", "0.1"});
  EXPECT_EQ(set.code, 1);
  EXPECT_NE(set.output.find("vtrace.entropy_cost is a field of algo \"vtrace\", and this run's algo is \"r2d2\""),
            std::string::npos)
      << set.output;
  EXPECT_EQ(number("run:status().config_version"), 0);
  EXPECT_EQ(ctl({"stop"}).code, 0);
  EXPECT_EQ(learner_->wait(120), std::optional<int>(0)) << read_file(log_);
}

TEST_F(ControlRun, SetTakesASchedulesLuaExpressionFromCtlAndTheConsole) {
  CtlResult set = ctl({"set", "optimizer.lr", "ms.linear(1e-3, 1e-4, 1e6)"});
  EXPECT_EQ(set.code, 0) << set.output;
  EXPECT_NE(set.output.find("\"config_version\": 1"), std::string::npos) << set.output;
  const std::string lr = ctl({"get", "optimizer.lr"}).output;
  EXPECT_NE(lr.find("linear"), std::string::npos) << lr;
  EXPECT_NE(lr.find("0.0001"), std::string::npos) << lr;
  // The console passes the schedule itself.
  CtlResult console = ctl({"-e", "run:set('vtrace.entropy_cost', ms.cosine { from = 0.02, to = 0.001, frames = 1e6 })"});
  EXPECT_EQ(console.code, 0) << console.output;
  EXPECT_NE(ctl({"get", "vtrace.entropy_cost"}).output.find("cosine"), std::string::npos);
  // Plain values keep working, and a list may be written either way.
  EXPECT_EQ(ctl({"set", "optimizer.lr", "2e-4"}).code, 0);
  EXPECT_EQ(ctl({"get", "optimizer.lr"}).output, "0.0002\n");
  EXPECT_EQ(number("run:status().config_version"), 3);
  // config.lua holds the schedule, so a resume continues it.
  EXPECT_NE(read_file(run_dir() + "/config.lua").find("schedule = \"cosine\""), std::string::npos)
      << read_file(run_dir() + "/config.lua");
  EXPECT_EQ(ctl({"stop"}).code, 0);
  EXPECT_EQ(learner_->wait(60), std::optional<int>(0)) << read_file(log_);
}

TEST_F(ControlRun, DashEPrintsWhatTheChunkReturns) {
  CtlResult one = ctl({"-e", "return 1"});
  EXPECT_EQ(one.code, 0) << one.output;
  EXPECT_EQ(one.output, "1\n");
  CtlResult table = ctl({"-e", "local s = run:status() return {env = s.env}, s.paused"});
  EXPECT_EQ(table.code, 0) << table.output;
  EXPECT_EQ(table.output, "{env = \"CartPole-v1\"}\tfalse\n");
  EXPECT_EQ(ctl({"stop"}).code, 0);
  EXPECT_EQ(learner_->wait(60), std::optional<int>(0)) << read_file(log_);
}

TEST_F(ControlRun, PauseHoldsTrainingUntilResume) {
  ASSERT_TRUE(eventually(60, [&] { return steps() > 0; })) << read_file(log_);
  EXPECT_EQ(ctl({"pause"}).code, 0);
  // A step under way may finish; then nothing moves.
  double held = steps();
  ASSERT_TRUE(eventually(10, [&] {
    const double now = steps();
    const bool same = now == held;
    held = now;
    return same;
  }));
  const std::string frames_expr = "run:status().frames";
  const double frames = number(frames_expr);
  std::this_thread::sleep_for(std::chrono::seconds(1));
  EXPECT_EQ(steps(), held);
  // Acting stops too once the queue is full (backpressure).
  EXPECT_LT(number(frames_expr) - frames, 20000);
  EXPECT_EQ(number("run:status().paused and 1 or 0"), 1);
  EXPECT_EQ(ctl({"resume"}).code, 0);
  EXPECT_TRUE(eventually(30, [&] { return steps() > held; }));
  learner_->signal(SIGINT);
  EXPECT_EQ(learner_->wait(60), std::optional<int>(0));
}

TEST_F(ControlRun, CheckpointEvaluateAndStop) {
  ASSERT_TRUE(eventually(60, [&] { return steps() > 0; })) << read_file(log_);
  CtlResult ckpt = ctl({"checkpoint"});
  ASSERT_EQ(ckpt.code, 0) << ckpt.output;
  const std::string path = ckpt.output.substr(1, ckpt.output.find('"', 1) - 1);
  EXPECT_TRUE(std::filesystem::exists(path)) << ckpt.output;

  CtlResult eval = ctl({"evaluate", "3"});
  ASSERT_EQ(eval.code, 0) << eval.output;
  EXPECT_NE(eval.output.find("\"episodes\": 3"), std::string::npos) << eval.output;
  // CartPole returns are episode lengths: at least 8 steps, at most 500.
  const double mean = number("run:evaluate(3).return_mean");
  EXPECT_GE(mean, 8);
  EXPECT_LE(mean, 500);

  EXPECT_EQ(ctl({"stop"}).code, 0);
  EXPECT_EQ(learner_->wait(60), std::optional<int>(0)) << read_file(log_);
  EXPECT_TRUE(logged("stopped: stopped from the control socket")) << read_file(log_);
  // The control socket is gone with the run.
  CtlResult after = ctl({"status"});
  EXPECT_EQ(after.code, 1);
  EXPECT_NE(after.output.find("is the run still going?"), std::string::npos) << after.output;
}

}  // namespace
}  // namespace moonseed::testing
