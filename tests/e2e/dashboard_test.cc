// The live dashboard of a real `moonseed run`, opened in Debian's headless
// Chromium (docs/dashboard.md): the page's chart holds the run's points, and a
// hot reload of the script shows up among its events. The test keeps the
// page's screenshot in build/test-artifacts/dashboard.png.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <regex>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/e2e/process.h"

namespace moonseed::testing {
namespace {

const std::string kBinary = MOONSEED_BINARY;
const std::string kExample = std::string(MOONSEED_SOURCE_DIR) + "/examples/cartpole_vtrace.lua";
const std::string kChromium = "/usr/bin/chromium";

// The value of data-NAME="..." on the page's #chart-data element; -1 when absent.
double data_attribute(const std::string& dom, const std::string& name) {
  std::smatch m;
  const std::regex pattern("id=\"chart-data\"[^>]*data-" + name + "=\"([0-9.e+-]+)\"");
  return std::regex_search(dom, m, pattern) ? std::stod(m[1].str()) : -1;
}

// The text of #chart-data's data-NAME attribute ("" when absent).
std::string data_text(const std::string& dom, const std::string& name) {
  std::smatch m;
  const std::regex pattern("id=\"chart-data\"[^>]*data-" + name + "=\"([^\"]*)\"");
  return std::regex_search(dom, m, pattern) ? m[1].str() : "";
}

// Chromium, headless, on `url`, with `mode` ("--dump-dom" or "--screenshot=FILE"), in a
// 1400 x 900 window (a laptop's); virtual time lets the page's once-a-second polls run five
// times. Returns what it printed.
std::string chromium(const std::string& dir, const std::string& url, const std::string& mode) {
  const std::string out = dir + "/chromium-" + std::to_string(::getpid()) + "-" + std::to_string(rand()) + ".txt";
  ChildProcess browser({kChromium, "--headless", "--disable-gpu", "--no-sandbox", "--user-data-dir=" + dir + "/profile",
                        "--window-size=1400,900", "--virtual-time-budget=5000", mode, url},
                       out);
  EXPECT_EQ(browser.wait(120), std::optional<int>(0)) << read_file(out);
  return read_file(out);
}

TEST(Dashboard, ARunsChartHoldsItsPointsAndAReloadShowsAsAnEvent) {
  if (::access(kChromium.c_str(), X_OK) != 0) {
    GTEST_SKIP() << "chromium is not installed (.ci/setup --all installs it: apt-get install chromium): "
                    "the dashboard's browser test is skipped";
  }
  const std::string dir = make_temp_dir("moonseed-dashboard");
  const std::string script = dir + "/exp.lua";
  const std::string original = read_file(kExample);
  save_like_an_editor(script, original);
  const std::string log = dir + "/learner.log";
  ChildProcess run({kBinary, "run", script, "runs_dir=" + dir + "/runs", "log.interval_s=0.2", "stop.return_mean=0",
                    "stop.seconds=0", kUntilStopped},
                   log);
  std::string run_dir;
  ASSERT_TRUE(eventually(60, [&] {
    const auto dirs = list_dirs(dir + "/runs");
    run_dir = dirs.size() == 1 ? dirs[0] : "";
    return !run_dir.empty() && last(read_metrics(run_dir + "/metrics.jsonl"), "return_mean") >= 0;
  })) << read_file(log);
  ASSERT_TRUE(eventually(30, [&] { return !read_file(run_dir + "/dashboard.address").empty(); })) << read_file(log);
  std::string url = read_file(run_dir + "/dashboard.address");
  url.pop_back();  // the newline
  EXPECT_TRUE(std::regex_match(url, std::regex("http://127\\.0\\.0\\.1:[0-9]+/"))) << url;
  EXPECT_NE(read_file(log).find("moonseed: dashboard on " + url + "\n"), std::string::npos) << read_file(log);

  save_like_an_editor(script, replaced(original, "lr = 1e-3", "lr = 5e-4"));
  ASSERT_TRUE(eventually(30, [&] { return !read_events(run_dir + "/metrics.jsonl", "reload").empty(); }))
      << read_file(log);

  const std::string dom = chromium(dir, url, "--dump-dom");
  // Every point the page holds is the run's: the N-th point's frames are those of
  // the N-th row of metrics.jsonl with a return_mean, read after the page was.
  std::vector<double> frames;
  for (const MetricsRow& row : read_metrics(run_dir + "/metrics.jsonl")) {
    if (row.count("return_mean") && row.count("frames") && !row.count("event")) frames.push_back(row.at("frames"));
  }
  const double points = data_attribute(dom, "points");
  ASSERT_GE(points, 1) << dom;
  ASSERT_LE(points, static_cast<double>(frames.size())) << dom;
  EXPECT_EQ(data_attribute(dom, "last-frames"), frames[static_cast<size_t>(points) - 1]) << dom;
  EXPECT_EQ(data_attribute(dom, "runs"), 1) << dom;
  EXPECT_EQ(data_attribute(dom, "reloads"), 1) << dom;
  EXPECT_NE(dom.find("data-event=\"reload\""), std::string::npos) << dom;
  EXPECT_NE(dom.find("optimizer.lr"), std::string::npos) << "the reload's change is shown: " << dom;
  // In words, not as JSON: the field, its old and its new value.
  EXPECT_NE(dom.find("<td>optimizer.lr: 0.001 \u2192 0.0005</td>"), std::string::npos) << dom;
  EXPECT_EQ(dom.find("{&quot;"), std::string::npos) << "no event as raw JSON: " << dom;
  EXPECT_EQ(dom.find("<td>{\""), std::string::npos) << "no event as raw JSON: " << dom;
  // At 1400 px nothing scrolls sideways.
  ASSERT_GT(data_attribute(dom, "view-width"), 0) << dom;
  EXPECT_LE(data_attribute(dom, "page-width"), data_attribute(dom, "view-width")) << dom;
  // The frames axis is labelled as `moonseed plot` labels it: 0, 20k, 40k..., never 1e+05.
  const std::string x_ticks = data_text(dom, "x-ticks");
  EXPECT_GE(std::count(x_ticks.begin(), x_ticks.end(), ' '), 2) << "at least 3 ticks: " << x_ticks;
  EXPECT_EQ(x_ticks.find("e+"), std::string::npos) << x_ticks;
  if (data_attribute(dom, "last-frames") >= 10000) {
    EXPECT_TRUE(std::regex_search(x_ticks, std::regex("[0-9]k|[0-9]M"))) << x_ticks;
  }
  EXPECT_NE(dom.find("<canvas"), std::string::npos) << "uPlot drew the chart: " << dom;
  EXPECT_NE(dom.find("<th>actors</th>"), std::string::npos) << "the status table: " << dom;
  EXPECT_NE(dom.find("<th>fps</th>"), std::string::npos) << "the status table: " << dom;
  EXPECT_NE(dom.find("lr = 0.0005"), std::string::npos) << "the current config: " << dom;
  // The Actors panel: a row per actor of the run (the example's two), each with
  // its rate over the run's last log interval as a number in frames/s.
  const std::regex actor_row("<tr class=\"\" data-actor=\"([0-9]+)\" data-connected=\"true\" data-fps=\"[0-9.e+-]+\">"
                             "<td>[0-9]+</td><td>[^<]+</td><td>[0-9]+</td><td>([0-9.]+)</td>");
  std::vector<std::string> rows;
  for (auto it = std::sregex_iterator(dom.begin(), dom.end(), actor_row); it != std::sregex_iterator(); ++it) {
    rows.push_back((*it)[1].str());
  }
  EXPECT_EQ(rows, (std::vector<std::string>{"0", "1"})) << dom;
  EXPECT_NE(dom.find("<div id=\"actors-box\">"), std::string::npos) << "the panel is shown: " << dom;
  EXPECT_NE(dom.find("<div id=\"ranks-box\" hidden=\"\">"), std::string::npos) << "one learner, no ranks: " << dom;

  const std::string artifacts = MOONSEED_ARTIFACT_DIR;
  std::filesystem::create_directories(artifacts);
  chromium(dir, url, "--screenshot=" + artifacts + "/dashboard.png");
  EXPECT_GT(std::filesystem::file_size(artifacts + "/dashboard.png"), 10000u);

  run.signal(SIGINT);
  EXPECT_EQ(run.wait(60), std::optional<int>(0)) << read_file(log);
}

// A short CartPole run with `listen` as dashboard.listen, to its end, in `dir`/runs.
struct ShortRun {
  explicit ShortRun(const std::string& listen, std::string in = make_temp_dir("moonseed-dashboard-short"),
                    const std::string& frames = "2000")
      : dir(std::move(in)), log(dir + "/learner-" + std::to_string(rand()) + ".log") {
    ChildProcess run({kBinary, "run", kExample, "runs_dir=" + dir + "/runs", "stop.seconds=0", "stop.frames=" + frames,
                      "log.interval_s=0.1", "dashboard.listen=" + listen},
                     log);
    exit_code = run.wait(120);
  }
  std::string output() const { return read_file(log); }
  std::string dir;
  std::string log;
  std::optional<int> exit_code;
};

// The rows of a run's metrics.jsonl that have a return_mean (the points of its
// chart: tick rows and the final stop row), or with `events`, those with an "event" key.
double rows_of(const std::string& run_dir, bool events = false) {
  double n = 0;
  for (const MetricsRow& row : read_metrics(run_dir + "/metrics.jsonl")) {
    n += events ? row.count("event") > 0 : row.count("return_mean") && !row.count("event");
  }
  if (!events) n += static_cast<double>(read_events(run_dir + "/metrics.jsonl", "stop").size());
  return n;
}

TEST(Dashboard, PastRunsOfOneScriptShowOnOneChartWithTheirMeanAndBand) {
  if (::access(kChromium.c_str(), X_OK) != 0) GTEST_SKIP() << "chromium is not installed (.ci/setup --all installs it)";
  const std::string dir = make_temp_dir("moonseed-dashboard-past");
  for (int i = 0; i < 2; ++i) ASSERT_EQ(ShortRun("127.0.0.1:0", dir, "40000").exit_code, std::optional<int>(0));
  const auto runs = list_dirs(dir + "/runs");
  ASSERT_EQ(runs.size(), 2u);
  ASSERT_GT(rows_of(runs[0]), 0) << "a row with a return_mean";
  ASSERT_GT(rows_of(runs[1]), 0) << "a row with a return_mean";
  const std::string log = dir + "/dashboard.log";
  ChildProcess server({kBinary, "dashboard", dir + "/runs"}, log);
  std::smatch url;
  ASSERT_TRUE(eventually(30, [&] {
    const std::string text = read_file(log);
    return std::regex_search(text, url, std::regex("dashboard of 2 runs on (http://127\\.0\\.0\\.1:[0-9]+/)"));
  })) << read_file(log);
  const std::string dom = chromium(dir, url[1].str() + "?group=1", "--dump-dom");
  EXPECT_EQ(data_attribute(dom, "runs"), 2) << dom;
  EXPECT_EQ(data_attribute(dom, "points"), rows_of(runs[0]) + rows_of(runs[1])) << dom;
  // The chart's last point is a stop row's: the run's last value.
  double stop_frames = 0;
  for (const auto& run : runs) {
    for (const MetricsRow& stop : read_events(run + "/metrics.jsonl", "stop")) stop_frames = std::max(stop_frames, stop.at("frames"));
  }
  EXPECT_EQ(data_attribute(dom, "last-frames"), stop_frames) << dom;
  EXPECT_EQ(data_attribute(dom, "events"), rows_of(runs[0], true) + rows_of(runs[1], true)) << dom;
  // The group and its band come from the server (curves::group_runs, curves::band).
  // Two runs of one seed (a run is not deterministic): "runs", not "seeds".
  EXPECT_NE(dom.find("cartpole_vtrace (2 runs) mean"), std::string::npos) << dom;
  EXPECT_NE(dom.find("cartpole_vtrace (2 runs) min"), std::string::npos) << dom;
  EXPECT_NE(dom.find("<div id=\"actors-box\" hidden=\"\">"), std::string::npos) << "past runs have no actors: " << dom;
  server.signal(SIGINT);
  EXPECT_EQ(server.wait(30), std::optional<int>(0)) << read_file(log);
}

TEST(Dashboard, AnEmptyListenTurnsItOff) {
  ShortRun run("\"\"");
  ASSERT_EQ(run.exit_code, std::optional<int>(0)) << run.output();
  const auto dirs = list_dirs(run.dir + "/runs");
  ASSERT_EQ(dirs.size(), 1u);
  EXPECT_FALSE(std::filesystem::exists(dirs[0] + "/dashboard.address"));
  EXPECT_EQ(run.output().find("dashboard on"), std::string::npos) << run.output();
}

TEST(Dashboard, BeyondLoopbackWithoutATokenTheRunIsRefusedBeforeItWritesAnything) {
  ShortRun run("0.0.0.0:0");
  ASSERT_EQ(run.exit_code, std::optional<int>(1)) << run.output();
  EXPECT_NE(run.output().find("dashboard.listen = \"0.0.0.0:0\" reaches beyond this host, and the run has no auth "
                              "token"),
            std::string::npos)
      << run.output();
  // Refused with the other start-up checks: no run directory, no actor started.
  EXPECT_TRUE(list_dirs(run.dir + "/runs").empty()) << run.output();
  EXPECT_EQ(run.output().find("joined"), std::string::npos) << run.output();
}

TEST(Dashboard, ALearnerGroupsPageShowsTheGroupsStatusAndARowForEachRank) {
  if (::access(kChromium.c_str(), X_OK) != 0) GTEST_SKIP() << "chromium is not installed (.ci/setup --all installs it)";
  TrainingRun run(kExample, {"log.interval_s=0.25", "stop.return_mean=0", "topology.learners=2"}, "moonseed-dashboard-group");
  ChildProcess learner(run.args({kUntilStopped}), run.log);
  // Both ranks have trained, and rank 0's rows show it.
  ASSERT_TRUE(eventually(120, [&] {
    const std::vector<MetricsRow> rows = run.metrics();
    return last(rows, "rank0_frames") > 0 && last(rows, "rank1_frames") > 0;
  })) << read_file(run.log);
  ASSERT_TRUE(eventually(30, [&] { return !read_file(run.run_dir() + "/dashboard.address").empty(); }))
      << read_file(run.log);
  std::string url = read_file(run.run_dir() + "/dashboard.address");
  url.pop_back();  // the newline
  const std::string browser = make_temp_dir("moonseed-dashboard-browser");  // not in runs_dir: one run directory there
  const std::string dom = chromium(browser, url, "--dump-dom");
  // The Learner ranks panel: a row for each rank, by rank, with the frames its report gave.
  const std::regex rank_row("<tr class=\"(stale)?\" data-rank=\"([0-9]+)\" data-stale=\"(true|false)\" "
                            "data-frames=\"([0-9.e+]+)\">");
  std::vector<std::string> ranks;
  for (auto it = std::sregex_iterator(dom.begin(), dom.end(), rank_row); it != std::sregex_iterator(); ++it) {
    ranks.push_back((*it)[2].str());
    EXPECT_GT(std::stod((*it)[4].str()), 0) << dom;
  }
  EXPECT_EQ(ranks, (std::vector<std::string>{"0", "1"})) << dom;
  EXPECT_NE(dom.find("<div id=\"ranks-box\">"), std::string::npos) << "the panel is shown: " << dom;
  EXPECT_NE(dom.find("over all 2 ranks"), std::string::npos) << dom;
  // The status table holds the group's counters: learners among them.
  EXPECT_NE(dom.find("<th>learners</th><td>2</td>"), std::string::npos) << dom;
  const std::string artifacts = MOONSEED_ARTIFACT_DIR;
  std::filesystem::create_directories(artifacts);
  chromium(browser, url, "--screenshot=" + artifacts + "/dashboard-group.png");
  learner.signal(SIGINT);
  EXPECT_EQ(learner.wait(120), std::optional<int>(0)) << read_file(run.log);
}

}  // namespace
}  // namespace moonseed::testing
