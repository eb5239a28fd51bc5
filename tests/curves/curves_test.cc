// curves/: run directories written by hand (metrics.jsonl, config.lua) read
// back into series, grouped by config apart from the seed, and the mean and
// band of a group at exact grid points.
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "base/log.h"
#include "curves/runs.h"

namespace moonseed::curves {
namespace {

namespace fs = std::filesystem;

class CurvesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::path(::testing::TempDir()) / ("curves-" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(root_);
    fs::create_directories(root_);
    previous_ = base::set_log_sink([this](const base::LogLine& line) { warnings_.emplace_back(line.text); });
  }
  void TearDown() override {
    base::set_log_sink(previous_);
    fs::remove_all(root_);
  }
  std::string make_run(const std::string& rel, const std::string& metrics, const std::string& name, int seed) {
    const fs::path dir = root_ / rel;
    fs::create_directories(dir);
    std::ofstream(dir / "metrics.jsonl") << metrics;
    if (!name.empty()) {
      std::ofstream(dir / "config.lua") << "-- Resolved configuration of experiment \"" << name << "\"\nreturn {\n  name = \""
                                        << name << "\",\n  algo = \"vtrace\",\n  seed = " << seed
                                        << ",\n  runs_dir = \"" << rel << "\",\n  env = {\n    id = \"CartPole-v1\",\n  },\n}\n";
    }
    return dir.string();
  }
  bool warned(const std::string& part) const {
    for (const auto& w : warnings_) {
      if (w.find(part) != std::string::npos) return true;
    }
    return false;
  }
  fs::path root_;
  std::vector<std::string> warnings_;
  base::LogSink previous_;
};

TEST(MetricsRowTest, ReadsNumbersAndTheEventAndRefusesWhatIsNotOneWholeObject) {
  const auto row = parse_metrics_row(
      " {\"time_s\": 2.5e-07, \"frames\": -3, \"event\": \"reload\", \"reason\": \"a \\\"quoted\\\" \\u0041\", "
      "\"changes\": {\"x\": {\"old\": [1, {\"y\": null}], \"new\": true}}, \"ok\": false, \"n\": null} ");
  ASSERT_TRUE(row.has_value());
  EXPECT_EQ(row->event, "reload");
  EXPECT_EQ(row->numbers.size(), 2u);
  EXPECT_EQ(row->numbers.at("time_s"), 2.5e-07);
  EXPECT_EQ(row->numbers.at("frames"), -3);
  EXPECT_TRUE(parse_metrics_row("{}").has_value());
  for (const char* bad : {"", "{\"a\": 1", "{\"a\": 1}}", "{\"a\": 1} x", "{\"a\" 1}", "{\"a\": 1,}", "[1]",
                          "{\"a\": \"open}", "{\"a\": nul}"}) {
    EXPECT_FALSE(parse_metrics_row(bad).has_value()) << bad;
  }
}

TEST_F(CurvesTest, ReadsTickRowsSkipsEventRowsNullsAndATornLastLine) {
  const std::string dir = make_run("a", 
      "{\"time_s\": 1, \"frames\": 100, \"return_mean\": null, \"fps\": 100}\n"
      "{\"time_s\": 1.5, \"event\": \"actor_joined\", \"actor\": 0, \"host\": \"h\", \"pid\": 7}\n"
      "{\"time_s\": 2, \"frames\": 200, \"return_mean\": 10.5}\n"
      "{\"time_s\": 2.5, \"event\": \"reload\", \"changes\": {\"a\": {\"old\": 1, \"new\": [2, 3]}}, \"origin\": \"file\"}\n"
      "{\"time_s\": 3, \"frames\": 300, \"return_mean\": 12}\n"
      "{\"time_s\": 4, \"frames\": 40",
      "cartpole", 1);
  const curves::Run run = read_run(dir);
  EXPECT_EQ(run.name, "cartpole");
  EXPECT_EQ(run.seed, 1);
  ASSERT_EQ(run.rows.size(), 3u);
  EXPECT_TRUE(warned("skipped 1 line that is not a whole JSON object (from line 6)")) << ::testing::PrintToString(warnings_);
  const Series s = series(run, "return_mean", XAxis::kFrames);
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].x, 200);
  EXPECT_EQ(s[0].y, 10.5);
  EXPECT_EQ(s[1].x, 300);
  const Series t = series(run, "return_mean", XAxis::kTime);
  EXPECT_EQ(t[1].x, 3);
  EXPECT_EQ(metric_names({run}), (std::vector<std::string>{"fps", "frames", "return_mean", "time_s"}));
  EXPECT_FALSE(has_metric(run, "eval_return_mean"));
}

TEST_F(CurvesTest, AResumedRunReplacesTheRowsPastItsCheckpoint) {
  const curves::Run run = read_run(make_run("r",
      "{\"time_s\": 1, \"frames\": 100, \"return_mean\": 1}\n"
      "{\"time_s\": 2, \"frames\": 200, \"return_mean\": 2}\n"
      "{\"time_s\": 3, \"frames\": 300, \"return_mean\": 3}\n"
      "{\"time_s\": 3, \"frames\": 300, \"return_mean\": 3.5}\n"
      "{\"time_s\": 2, \"frames\": 200, \"event\": \"resume\", \"checkpoint\": \"checkpoints/ckpt-2.pt\"}\n"
      "{\"time_s\": 2.5, \"frames\": 250, \"return_mean\": 20}\n",
      "x", 1));
  const Series s = series(run, "return_mean", XAxis::kFrames);
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[0].x, 100);
  EXPECT_EQ(s[1].x, 200);
  EXPECT_EQ(s[2].x, 250);
  EXPECT_EQ(s[2].y, 20);
}

TEST_F(CurvesTest, TheStopRowMarkedWithCountersIsAPointOtherEventRowsAreNot) {
  // "resume" has frames and episodes (the checkpoint's) and "checkpoint" a value: not points.
  const curves::Run run = read_run(make_run("s",
      "{\"time_s\": 1, \"frames\": 100, \"return_mean\": 1}\n"
      "{\"time_s\": 1.5, \"frames\": 150, \"episodes\": 9, \"event\": \"resume\", \"return_mean\": 99}\n"
      "{\"time_s\": 2, \"event\": \"checkpoint\", \"metric\": \"return_mean\", \"value\": 7, \"frames\": 180}\n"
      "{\"time_s\": 2, \"frames\": 200, \"return_mean\": 2}\n"
      "{\"time_s\": 2.5, \"frames\": 260, \"return_mean\": 4.5, \"event\": \"stop\", \"counters\": true, "
      "\"reason\": \"reached stop.frames = 250\"}\n",
      "x", 1));
  const Series s = series(run, "return_mean", XAxis::kFrames);
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[1].x, 200);
  EXPECT_EQ(s[2].x, 260);
  EXPECT_EQ(s[2].y, 4.5);
  EXPECT_FALSE(has_metric(run, "value"));
  const auto marked = parse_metrics_row("{\"event\": \"stop\", \"counters\": true}");
  ASSERT_TRUE(marked.has_value());
  EXPECT_TRUE(is_point(*marked));
  EXPECT_FALSE(is_point(*parse_metrics_row("{\"event\": \"stop\", \"counters\": false}")));
  EXPECT_TRUE(is_point(*parse_metrics_row("{\"frames\": 1}")));
}

TEST_F(CurvesTest, GroupsRunsThatDifferOnlyBySeed) {
  std::vector<curves::Run> runs;
  runs.push_back(read_run(make_run("runs/a1", "{\"frames\": 1, \"return_mean\": 1}\n", "cp", 1)));
  runs.push_back(read_run(make_run("other/a2", "{\"frames\": 1, \"return_mean\": 1}\n", "cp", 2)));
  runs.push_back(read_run(make_run("runs/b", "{\"frames\": 1, \"return_mean\": 1}\n", "breakout", 1)));
  runs.push_back(read_run(make_run("runs/noconfig", "{\"frames\": 1, \"return_mean\": 1}\n", "", 0)));
  // Same name, another config: a group of its own, told apart by its label.
  const std::string changed = make_run("runs/a3", "{\"frames\": 1, \"return_mean\": 1}\n", "cp", 3);
  std::ofstream(changed + "/config.lua", std::ios::app) << "-- another field\n";
  runs.push_back(read_run(changed));
  EXPECT_TRUE(warned("has no config.lua"));
  EXPECT_EQ(runs[0].env, "CartPole-v1");
  EXPECT_EQ(runs[3].env, "") << "no config.lua";
  const std::vector<Group> groups = group_runs(runs);
  ASSERT_EQ(groups.size(), 4u);
  EXPECT_EQ(groups[0].label, "cp (2 seeds)");
  EXPECT_EQ(groups[0].runs, (std::vector<size_t>{0, 1}));
  EXPECT_EQ(groups[1].label, "breakout");
  EXPECT_EQ(groups[2].label, "noconfig");
  EXPECT_EQ(groups[3].label, "cp #2");
  EXPECT_EQ(groups[3].runs, (std::vector<size_t>{4}));
  // Repeats of one seed are one group too (asynchronous runs differ), called runs, not seeds.
  runs.push_back(read_run(make_run("runs/a1-again", "{\"frames\": 1, \"return_mean\": 2}\n", "cp", 1)));
  EXPECT_EQ(group_runs(runs)[0].label, "cp (3 runs)");
}

TEST_F(CurvesTest, MeanAndMinMaxBandAtEveryMembersXWhereAllOverlap) {
  // a: (0,0) (10,10) (20,20) (30,30); b: (5,0) (15,20) (25,0). Overlap [5, 25];
  // grid: 5 10 15 20 25. a interpolates to x; b at 10 is 10, at 20 is 10.
  const Series a = {{0, 0}, {10, 10}, {20, 20}, {30, 30}};
  const Series b = {{5, 0}, {15, 20}, {25, 0}};
  const Band band_ab = band({a, b});
  EXPECT_EQ(band_ab.x, (std::vector<double>{5, 10, 15, 20, 25}));
  EXPECT_EQ(band_ab.mean, (std::vector<double>{2.5, 10, 17.5, 15, 12.5}));
  EXPECT_EQ(band_ab.low, (std::vector<double>{0, 10, 15, 10, 0}));
  EXPECT_EQ(band_ab.high, (std::vector<double>{5, 10, 20, 20, 25}));
  // A long union becomes evenly spaced points over the same span.
  const Band coarse = band({a, b}, 3);
  EXPECT_EQ(coarse.x, (std::vector<double>{5, 15, 25}));
  EXPECT_EQ(coarse.mean, (std::vector<double>{2.5, 17.5, 12.5}));
  // No overlap, or an empty member: no band.
  EXPECT_TRUE(band({{{0, 1}, {1, 1}}, {{2, 1}, {3, 1}}}).x.empty());
  EXPECT_TRUE(band({a, {}}).x.empty());
}

TEST_F(CurvesTest, FindsRunsBelowADirectoryAndRefusesMissingOnes) {
  make_run("runs/b-run", "{}\n", "b", 1);
  make_run("runs/a-run", "{}\n", "a", 1);
  make_run("runs/nested/c-run", "{}\n", "c", 1);
  fs::create_directories(root_ / "runs/a-run/checkpoints/deeper");
  std::ofstream(root_ / "runs/a-run/checkpoints/deeper/metrics.jsonl") << "{}\n";
  const auto dirs = find_run_dirs({(root_ / "runs").string()});
  ASSERT_EQ(dirs.size(), 3u);
  EXPECT_EQ(fs::path(dirs[0]).filename(), "a-run");
  EXPECT_EQ(fs::path(dirs[1]).filename(), "b-run");
  EXPECT_EQ(fs::path(dirs[2]).filename(), "c-run");
  EXPECT_EQ(find_run_dirs({(root_ / "runs/b-run").string()}).size(), 1u);
  try {
    find_run_dirs({(root_ / "missing").string()});
    FAIL() << "no throw";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("missing: no such directory"), std::string::npos) << e.what();
  }
  fs::create_directories(root_ / "empty");
  EXPECT_THROW(find_run_dirs({(root_ / "empty").string()}), std::runtime_error);
  EXPECT_FALSE(warned("no run directory (one with a metrics.jsonl) under"));  // the error says it alone
  // Among several paths, the one without a run is named.
  EXPECT_EQ(find_run_dirs({(root_ / "empty").string(), (root_ / "runs/b-run").string()}).size(), 1u);
  EXPECT_TRUE(warned("no run directory (one with a metrics.jsonl) under " + (root_ / "empty").string()));
}

}  // namespace
}  // namespace moonseed::curves
