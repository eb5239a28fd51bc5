// The env's own return beside the shaped one, end to end: a real `moonseed
// run` on CartPole whose reward_shaping adds 100 to every reward, so that the
// two differ by far. CartPole pays 1 per step: an episode's env return is its
// length, its shaped return 101 times that.
#include <cmath>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/e2e/process.h"

namespace moonseed::testing {
namespace {

const std::string kBinary = MOONSEED_BINARY;

const std::string kScript =
    "local ms = require 'moonseed'\n"
    "return ms.experiment {\n"
    "  name = 'bonus',\n"
    "  env = { id = 'CartPole-v1' },\n"
    "  model = ms.mlp { hidden = { 32 } },\n"
    "  learner = { batch = 8, unroll = 20, queue_capacity = 16 },\n"
    "  topology = { actors = 2, envs_per_actor = 16 },\n"
    "  log = { interval_s = 0.25, progress = false },\n"
    // CartPole-v1 returns at most 500: only a shaped return reaches 1000.
    "  stop = { frames = 6000, seconds = 120, return_mean = 1000 },\n"
    "  record = { enabled = true },\n"
    "  reward_shaping = function(n, reward, obs, obs_size, terminated, truncated)\n"
    "    for i = 0, n - 1 do\n"
    "      reward[i] = reward[i] + 100\n"
    "    end\n"
    "  end,\n"
    "}\n";

bool near(double a, double b) { return std::fabs(a - b) <= 1e-6 * std::max(1.0, std::fabs(b)); }

// The newest row of the run's counters: the stop row, which holds them at the end (the last
// tick before it may be from early in a short run: it had 93 episodes once on a fast machine).
MetricsRow last_tick(const std::vector<MetricsRow>& rows) {
  for (auto r = rows.rbegin(); r != rows.rend(); ++r) {
    if (r->count("frames") && r->count("episodes") && r->count("return_mean")) return *r;
  }
  return {};
}

// A number field of a one-line JSON object; NaN when absent.
double json_number(const std::string& line, const std::string& key) {
  const size_t at = line.find("\"" + key + "\":");
  if (at == std::string::npos) return std::nan("");
  return std::stod(line.substr(at + key.size() + 3));
}

class BonusRun : public ::testing::Test {
 protected:
  void SetUp() override { save_like_an_editor(run_.script, kScript); }
  // Runs to its end with `overrides`; the output of the run.
  std::string run_to_end(const std::vector<std::string>& overrides) {
    ChildProcess learner(run_.args(overrides), run_.log);
    EXPECT_EQ(learner.wait(180), std::optional<int>(0)) << read_file(run_.log);
    return read_file(run_.log);
  }
  std::string stop_reason() const {
    const std::string metrics = read_file(run_.run_dir() + "/metrics.jsonl");
    const size_t at = metrics.rfind("\"reason\": \"");
    return at == std::string::npos ? "" : metrics.substr(at + 11, metrics.find('"', at + 11) - at - 11);
  }

  TrainingRun run_{make_temp_dir("moonseed-returns") + "/exp.lua", {}, "moonseed-returns"};
};

TEST_F(BonusRun, MetricsReportTheEnvsReturnStopRulesUseItAndLogLsShowsBoth) {
  const std::string out = run_to_end({});
  // stop.return_mean compares the env's return, which never reaches 1000.
  EXPECT_EQ(stop_reason(), "reached stop.frames = 6000") << out;

  const MetricsRow row = last_tick(run_.metrics());
  ASSERT_GE(row.count("episodes") ? row.at("episodes") : 0, 100) << out;
  ASSERT_TRUE(row.count("return_mean") && row.count("length_mean") && row.count("shaped_return_mean")) << out;
  const double length = row.at("length_mean");
  EXPECT_TRUE(near(row.at("return_mean"), length)) << "return_mean " << row.at("return_mean") << ", length_mean "
                                                   << length;
  EXPECT_TRUE(near(row.at("shaped_return_mean"), 101 * length))
      << "shaped_return_mean " << row.at("shaped_return_mean") << ", length_mean " << length;
  EXPECT_NE(out.find(" (shaped "), std::string::npos) << "the end-of-run line names the shaped return too\n" << out;

  // The experience log: every episode's env return beside its shaped one.
  const std::string listing = run_.runs_dir + "/ls.json";
  ChildProcess ls({kBinary, "log", "ls", "--json", run_.run_dir() + "/experience"}, listing);
  ASSERT_EQ(ls.wait(60), std::optional<int>(0)) << read_file(listing);
  std::istringstream lines(read_file(listing));
  int episodes = 0, ended = 0;
  for (std::string line; std::getline(lines, line);) {
    const double env_return = json_number(line, "return");
    const double shaped = json_number(line, "shaped_return");
    ASSERT_TRUE(near(shaped, 101 * env_return)) << line;
    ++episodes;
    if (line.find("\"end\":\"terminated\"") != std::string::npos) {
      ++ended;
      EXPECT_GT(env_return, 0) << line;
    }
  }
  EXPECT_GE(episodes, 100);
  EXPECT_GE(ended, 50);
}

TEST_F(BonusRun, StopOnShapedReturnStopsOnTheShapedMean) {
  const std::string out = run_to_end({"stop.on_shaped_return=true", "record.enabled=false"});
  const std::string reason = stop_reason();
  EXPECT_EQ(reason.rfind("shaped_return_mean ", 0), 0u) << reason << "\n" << out;
  EXPECT_NE(reason.find(" >= stop.return_mean = 1000"), std::string::npos) << reason;
}

}  // namespace
}  // namespace moonseed::testing
