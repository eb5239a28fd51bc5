// Reward shaping end to end: a real `moonseed run` on CartPole whose actor
// processes run the script's reward_shaping function, while the test edits
// the script as a user would.
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/e2e/process.h"

namespace moonseed::testing {
namespace {

const std::string kBinary = MOONSEED_BINARY;

// CartPole pays 1 per step, so with the reward multiplied by k every
// episode's return is k times its length.
const std::string kScript =
    "local ms = require 'moonseed'\n"                                        // 1
    "return ms.experiment {\n"                                               // 2
    "  name = 'shaped',\n"                                                   // 3
    "  env = { id = 'CartPole-v1' },\n"                                      // 4
    "  model = ms.mlp { hidden = { 32 } },\n"                                // 5
    "  learner = { batch = 8, unroll = 20, queue_capacity = 16 },\n"         // 6
    "  topology = { actors = 2, envs_per_actor = 16 },\n"                    // 7
    "  log = { interval_s = 0.25, progress = false },\n"                     // 8
    "  stop = { seconds = 120 },\n"                                          // 9
    "  reward_shaping = function(n, reward, obs, obs_size, terminated, truncated)\n"  // 10
    "    for i = 0, n - 1 do\n"                                              // 11
    "      reward[i] = 2 * reward[i]\n"                                      // 12
    "    end\n"                                                              // 13
    "  end,\n"                                                               // 14
    "}\n";

// One request on RUN_DIR's control socket, from this process: its reply line
// ("" when the socket cannot be reached). Unlike `moonseed ctl`, no process
// has to start first, which can take seconds on a loaded machine.
std::string control_request(const std::string& run_dir, const std::string& line) {
  std::string address = read_file(run_dir + "/control.address");
  while (!address.empty() && (address.back() == '\n' || address.back() == ' ')) address.pop_back();
  const std::string path = address.rfind("unix:", 0) == 0 ? address.substr(5) : run_dir + "/control.sock";
  sockaddr_un where{};
  where.sun_family = AF_UNIX;
  if (path.size() >= sizeof where.sun_path) return "";
  std::memcpy(where.sun_path, path.c_str(), path.size() + 1);
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  std::string reply;
  if (fd >= 0 && ::connect(fd, reinterpret_cast<const sockaddr*>(&where), sizeof where) == 0) {
    const std::string request = line + "\n";
    if (::write(fd, request.data(), request.size()) == static_cast<ssize_t>(request.size())) {
      char c = 0;
      while (::read(fd, &c, 1) == 1 && c != '\n') reply += c;
    }
  }
  if (fd >= 0) ::close(fd);
  return reply;
}

class ShapedRun : public ::testing::Test {
 protected:
  void SetUp() override { save_like_an_editor(script_, kScript); }
  void TearDown() override {
    if (learner_ && learner_->running()) {
      learner_->signal(SIGINT);
      EXPECT_EQ(learner_->wait(60), std::optional<int>(0)) << log();
    }
  }
  void start() {
    learner_.emplace(std::vector<std::string>{kBinary, "run", script_, "runs_dir=" + dir_ + "/runs"}, log_);
    ASSERT_TRUE(eventually(60, [&] { return latest("episodes") >= 100; })) << log();
  }
  std::string run_dir() const {
    auto dirs = list_dirs(dir_ + "/runs");
    return dirs.size() == 1 ? dirs[0] : std::string();
  }
  // The newest tick row (reload events are rows too, without "frames").
  MetricsRow last_tick() const {
    if (run_dir().empty()) return {};
    const std::vector<MetricsRow> rows = read_metrics(run_dir() + "/metrics.jsonl");
    for (auto r = rows.rbegin(); r != rows.rend(); ++r) {
      if (r->count("frames")) return *r;
    }
    return {};
  }
  double latest(const std::string& key) const {
    const MetricsRow row = last_tick();
    return row.count(key) ? row.at(key) : -1;
  }
  // The last 100 episodes all paid `factor` per step once shaped; the env's
  // own return (return_mean) stays their length.
  bool returns_are(double factor) const {
    const MetricsRow row = last_tick();
    if (!row.count("shaped_return_mean") || !row.count("return_mean") || !row.count("length_mean")) return false;
    const double length = row.at("length_mean");
    return length > 0 && std::fabs(row.at("shaped_return_mean") - factor * length) <= 1e-6 * factor * length &&
           std::fabs(row.at("return_mean") - length) <= 1e-6 * length;
  }
  std::string log() const { return read_file(log_); }
  bool logged(const std::string& text) const { return log().find(text) != std::string::npos; }

  std::string dir_ = make_temp_dir("moonseed-shaping");
  std::string script_ = dir_ + "/exp.lua";
  std::string log_ = dir_ + "/learner.log";
  std::optional<ChildProcess> learner_;
};

TEST_F(ShapedRun, DoublingTheRewardMakesEveryReturnTwiceItsLength) {
  start();
  EXPECT_TRUE(returns_are(2)) << "return_mean " << latest("return_mean") << ", length_mean "
                              << latest("length_mean") << "\n" << log();
}

TEST_F(ShapedRun, SavingTheScriptWithFactorThreeIsAppliedAtUnrollBoundariesAndLaterEpisodesShowIt) {
  start();
  ASSERT_TRUE(returns_are(2)) << log();
  save_like_an_editor(script_, replaced(kScript, "reward[i] = 2 * reward[i]", "reward[i] = 3 * reward[i]"));
  ASSERT_TRUE(eventually(30, [&] { return logged("reload #1 applied: reward_shaping (function) -> (function changed)"); }))
      << log();
  EXPECT_TRUE(eventually(60, [&] { return returns_are(3); }))
      << "return_mean " << latest("return_mean") << ", length_mean " << latest("length_mean") << "\n" << log();
  EXPECT_NE(read_file(run_dir() + "/config.lua").find("reward[i] = 3 * reward[i]"), std::string::npos);
}

TEST_F(ShapedRun, AFunctionThatRaisesIsReportedWithFileAndLineAndTrainingGoesOnWithThePreviousOne) {
  start();
  // Only with more than one env: the loader's trial call (one env) passes.
  save_like_an_editor(script_, replaced(kScript, "reward[i] = 2 * reward[i]",
                                        "reward[i] = 2 * reward[i] + (n > 1 and obs.nope or 0)"));
  ASSERT_TRUE(eventually(30, [&] { return logged("reward_shaping failed at "); })) << log();
  const std::string text = log();
  EXPECT_NE(text.find("moonseed: actor "), std::string::npos) << text;
  EXPECT_NE(text.find("exp.lua:12: "), std::string::npos) << text;
  EXPECT_NE(text.find("; keeping the previous function"), std::string::npos) << text;
  const double steps = latest("optimizer_steps");
  const double episodes = latest("episodes");
  EXPECT_TRUE(eventually(30, [&] { return latest("optimizer_steps") > steps && latest("episodes") >= episodes + 100; }))
      << log();
  EXPECT_TRUE(returns_are(2)) << "the doubling function still runs\n" << log();
  // The report is in metrics.jsonl too.
  EXPECT_TRUE(eventually(10, [&] {
    const std::string metrics = read_file(run_dir() + "/metrics.jsonl");
    return metrics.find("\"event\": \"actor_notice\"") != std::string::npos &&
           metrics.find("exp.lua:12: ") != std::string::npos;
  }));
}

// Limits on user Lua (docs/security.md "Scripts"), with the real binary.

// The learner's peak resident memory (VmHWM), in MiB.
double peak_rss_mib(pid_t pid) {
  const std::string status = read_file("/proc/" + std::to_string(pid) + "/status");
  const size_t at = status.find("VmHWM:");
  return at == std::string::npos ? -1 : std::stod(status.substr(at + 6)) / 1024;
}

TEST_F(ShapedRun, AnEndlessLoopAtTheTopOfASavedScriptIsRefusedTrainingGoesOnAndSigtermStillEndsTheRun) {
  start();
  save_like_an_editor(script_, replaced(kScript, "return ms.experiment {", "while true do end\nreturn ms.experiment {"));
  ASSERT_TRUE(eventually(30, [&] { return logged("reload failed, nothing changed"); })) << log();
  EXPECT_TRUE(logged("exp.lua:2: the script ran for more than 5 s, its time limit")) << log();
  const double steps = latest("optimizer_steps");
  EXPECT_TRUE(eventually(30, [&] { return latest("optimizer_steps") > steps; })) << log();
  learner_->signal(SIGTERM);
  EXPECT_EQ(learner_->wait(60), std::optional<int>(0)) << log();
}

TEST_F(ShapedRun, TheControlLoopAnswersControlRequestsWhileASavedScriptStillLoops) {
  start();
  save_like_an_editor(script_, replaced(kScript, "return ms.experiment {", "while true do end\nreturn ms.experiment {"));
  // The watcher looks every 0.25 s: the script is loading now, and loops for 5 s.
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  ASSERT_FALSE(logged("reload failed")) << log();
  const std::string reply = control_request(run_dir(), "status");
  EXPECT_NE(reply.find("optimizer_steps"), std::string::npos) << reply;
  EXPECT_FALSE(logged("reload failed")) << "the answer came while the script still ran\n" << log();
  ASSERT_TRUE(eventually(30, [&] { return logged("reload failed, nothing changed"); })) << log();
}

TEST_F(ShapedRun, AHugeStringInASavedScriptIsRefusedWithAMemoryMessageAndTheLearnerDoesNotGrow) {
  start();
  const double before = peak_rss_mib(learner_->pid());
  save_like_an_editor(script_, replaced(kScript, "name = 'shaped',", "name = 'shaped' .. string.rep('x', 2^30):sub(1, 0),"));
  ASSERT_TRUE(eventually(30, [&] { return logged("reload failed, nothing changed"); })) << log();
  EXPECT_TRUE(logged("exp.lua: not enough memory (the Lua code asked for more than 512 MiB, its memory limit)"))
      << log();
  EXPECT_LT(peak_rss_mib(learner_->pid()) - before, 256) << "peak RSS before " << before << " MiB";
}

TEST_F(ShapedRun, AShapingFunctionWritingOutOfRangeIsRefusedAtReloadAndRestoringTheScriptSaysSo) {
  start();
  save_like_an_editor(script_, replaced(kScript, "    end\n  end,", "    end\n    reward[n + 100000] = 0\n  end,"));
  ASSERT_TRUE(eventually(30, [&] { return logged("reload failed, nothing changed"); })) << log();
  EXPECT_TRUE(logged("exp.lua:10: reward_shaping: a trial call (one env, its first observation, reward 0) failed: "
                     "reward_shaping failed at " + script_ + ":14: reward[100001] is out of range: reward has 1 elements, 0 to 0"))
      << log();
  const double episodes = latest("episodes");
  EXPECT_TRUE(eventually(30, [&] { return latest("episodes") >= episodes + 100; })) << log();
  EXPECT_TRUE(returns_are(2)) << "the doubling function still runs\n" << log();
  EXPECT_FALSE(logged("reward[100016]")) << "no actor ran the refused function\n" << log();

  save_like_an_editor(script_, kScript);
  ASSERT_TRUE(eventually(30, [&] { return logged(script_ + " loads again; config unchanged"); })) << log();
  EXPECT_TRUE(eventually(10, [&] { return !read_events(run_dir() + "/metrics.jsonl", "reload_restored").empty(); }));
  EXPECT_EQ(read_events(run_dir() + "/metrics.jsonl", "reload").size(), 0u);
}

TEST_F(ShapedRun, AShapingFunctionThatNeverReturnsEndsItsActorsWithANamedLineTheLearnerQuotes) {
  // The loader's trial call has one env; the actors' groups have 16.
  save_like_an_editor(script_, replaced(kScript, "    for i = 0, n - 1 do\n",
                                        "    if n > 1 then while true do end end\n    for i = 0, n - 1 do\n"));
  learner_.emplace(std::vector<std::string>{kBinary, "run", script_, "runs_dir=" + dir_ + "/runs"}, log_);
  // The actors call it on their reset observations, before their first env step.
  EXPECT_TRUE(eventually(60, [&] {
    return logged("exited with code 5 before its first env step; restarting in 1 s; its log ends: "
                  "moonseed actor: reward_shaping at " + script_ +
                  ":10 ran for more than 1 s; stopping this actor (exit code 5)");
  })) << log();
}

TEST_F(ShapedRun, AShapingFunctionThatLoopsAfterSomeCallsIsParkedAndTheRunExitsSayingWhy) {
  // It passes the loader's trial call and the actors' first 40 calls (a global counts them in
  // each actor process), then loops: every actor life makes progress, then the call watchdog ends it.
  save_like_an_editor(script_, replaced(kScript, "    for i = 0, n - 1 do\n",
                                        "    calls = (calls or 0) + 1\n"
                                        "    if n > 1 and calls > 40 then while true do end end\n"
                                        "    for i = 0, n - 1 do\n"));
  learner_.emplace(std::vector<std::string>{kBinary, "run", script_, "runs_dir=" + dir_ + "/runs",
                                            "topology.actor_deaths_to_park=4", "topology.actor_max_backoff_s=1"},
                   log_);
  const std::optional<int> code = learner_->wait(180);
  ASSERT_TRUE(code.has_value()) << "the run never ended\n" << log();
  EXPECT_EQ(*code, 1) << log();
  EXPECT_TRUE(logged("actor 0 (env CartPole-v1, pid ")) << log();
  EXPECT_TRUE(logged(") exited with code 5; restarting now; its log ends: moonseed actor: reward_shaping at " + script_))
      << log();
  EXPECT_TRUE(logged(") exited with code 5, 4 deaths in 600 s: not restarting it; the end of")) << log();
  EXPECT_TRUE(logged("stopped: no actor can run: every local actor slot is parked after repeated failures of env "
                     "CartPole-v1")) << log();
  EXPECT_GT(latest("frames"), 0) << "it worked in between";
  EXPECT_LE(latest("actor_restarts"), 6);
}

}  // namespace
}  // namespace moonseed::testing
