// `moonseed plot` on real runs (docs/plot.md): two short CartPole runs of one
// script with seeds 1 and 2, drawn by Debian's gnuplot. The SVG is read as
// text: a line per run with one point per row, the stop row's last (--no-group), or one line for
// the two seeds with its band; the PNG's IHDR gives its size. And the errors a
// user can meet.
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "curves/runs.h"
#include "tests/e2e/process.h"

namespace moonseed::testing {
namespace {

namespace fs = std::filesystem;

const std::string kBinary = MOONSEED_BINARY;
const std::string kVtrace = std::string(MOONSEED_SOURCE_DIR) + "/examples/cartpole_vtrace.lua";

struct Result {
  std::optional<int> exit_code;
  std::string output;
};

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

class PlotRuns : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    for (const char* seed : {"seed=1", "seed=2"}) {
      runs_.push_back(new TrainingRun(kVtrace, {"stop.frames=400000", "stop.return_mean=0", "log.progress=false", "log.interval_s=0.2", seed},
                                      "moonseed-plot"));
      ChildProcess learner(runs_.back()->args({}), runs_.back()->log);
      ASSERT_EQ(learner.wait(240), std::optional<int>(0)) << read_file(runs_.back()->log);
    }
    out_ = make_temp_dir("moonseed-plot-out");
  }
  static void TearDownTestSuite() {
    std::error_code ec;
    for (auto* run : runs_) {
      fs::remove_all(run->runs_dir, ec);
      delete run;
    }
    runs_.clear();
    fs::remove_all(out_, ec);
  }
  static Result plot(const std::vector<std::string>& args, const std::vector<std::string>& env = {}) {
    std::vector<std::string> argv;
    if (!env.empty()) {
      argv.push_back("/usr/bin/env");
      argv.insert(argv.end(), env.begin(), env.end());
    }
    argv.push_back(kBinary);
    argv.push_back("plot");
    argv.insert(argv.end(), args.begin(), args.end());
    const std::string log = out_ + "/plot-" + std::to_string(count_++) + ".log";
    ChildProcess process(argv, log);
    Result r;
    r.exit_code = process.wait(120);
    r.output = read_file(log);
    return r;
  }
  static std::string dir(int i) { return runs_[i]->run_dir(); }
  // Points a run's return_mean line should hold: tick rows and the final stop row with a number for
  // it, one per distinct frame count.
  static size_t expected_points(int i) {
    std::set<double> frames;
    for (const auto& row : read_metrics(dir(i) + "/metrics.jsonl")) {
      if (!row.count("event") && row.count("return_mean") && row.count("frames")) frames.insert(row.at("frames"));
    }
    for (const auto& row : read_events(dir(i) + "/metrics.jsonl", "stop")) frames.insert(row.at("frames"));
    return frames.size();
  }
  static inline std::vector<TrainingRun*> runs_;
  static inline std::string out_;
  static inline int count_ = 0;
};

// The part of a gnuplot SVG that draws the line titled `title` ("" when there is none).
std::string svg_plot(const std::string& svg, const std::string& title) {
  // gnuplot titles each line's group gnuplot_plot_N and writes the legend text inside it.
  const size_t legend = svg.find("<text>" + title + "</text>");
  if (legend == std::string::npos) return "";
  const size_t start = svg.rfind("<g id=\"gnuplot_plot_", legend);
  if (start == std::string::npos) return "";
  const size_t end = svg.find("<g id=\"gnuplot_plot_", start + 1);
  return svg.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

// Points drawn by the paths of one plot in its line's colour (after the last
// plot come the border's, in black), less the two of its legend sample.
size_t path_points(const std::string& plot) {
  size_t points = 0;
  std::string colour;
  for (size_t at = plot.find("<path stroke='"); at != std::string::npos; at = plot.find("<path stroke='", at + 1)) {
    const size_t colour_end = plot.find('\'', at + 14);
    const std::string stroke = plot.substr(at + 14, colour_end - at - 14);
    if (colour.empty()) colour = stroke;
    if (stroke != colour) continue;
    const size_t d = plot.find("d='", colour_end);
    const size_t end = plot.find('\'', d + 3);
    for (size_t k = d; k < end; ++k) points += plot[k] == ',';
  }
  return points >= 2 ? points - 2 : 0;
}

TEST_F(PlotRuns, SvgHasOneLinePerRunWithEveryRowAsAPointEndingAtTheStopRowsValue) {
  // What plot draws (curves::series) ends at the run's last values, those of its stop row.
  const std::vector<MetricsRow> stops = read_events(dir(0) + "/metrics.jsonl", "stop");
  ASSERT_EQ(stops.size(), 1u);
  const curves::Run run = curves::read_run(dir(0));
  for (const char* metric : {"return_mean", "train_time_s", "optimizer_steps"}) {
    const curves::Series s = curves::series(run, metric, curves::XAxis::kFrames);
    ASSERT_FALSE(s.empty()) << metric;
    EXPECT_EQ(s.back().x, stops[0].at("frames")) << metric;
    EXPECT_EQ(s.back().y, stops[0].at(metric)) << metric;
  }

  const std::string svg_path = out_ + "/runs.svg";
  const Result r = plot({dir(0), dir(1), "--no-group", "-o", svg_path});
  ASSERT_EQ(r.exit_code, std::optional<int>(0)) << r.output;
  EXPECT_TRUE(contains(r.output, "wrote " + svg_path + " (2 runs, 1 chart, 2 lines)")) << r.output;
  const std::string svg = read_file(svg_path);
  ASSERT_TRUE(contains(svg, "<svg")) << svg.substr(0, 200);
  for (int i = 0; i < 2; ++i) {
    // Each line is named by its experiment and seed, not by its timestamped directory.
    const std::string id = "cartpole_vtrace (seed " + std::to_string(i + 1) + ")";
    const std::string part = svg_plot(svg, id);
    ASSERT_FALSE(part.empty()) << "no line titled " << id;
    EXPECT_GT(expected_points(i), 3u);
    EXPECT_EQ(path_points(part), expected_points(i)) << id;
  }
  EXPECT_FALSE(contains(svg, "<polygon")) << "no band without grouping";
  EXPECT_FALSE(fs::exists(svg_path + ".partial"));
}

TEST_F(PlotRuns, SeedsOfOneScriptAreOneLineWithABandFoundUnderARunsDirectory) {
  // Both runs under one directory, as a RUNS_DIR.
  const std::string both = out_ + "/both";
  fs::create_directories(both);
  fs::create_symlink(fs::absolute(dir(0)), both + "/a");
  fs::create_symlink(fs::absolute(dir(1)), both + "/b");
  const std::string svg_path = out_ + "/group.svg";
  const Result r = plot({both, "-o", svg_path, "--x", "time"});
  ASSERT_EQ(r.exit_code, std::optional<int>(0)) << r.output;
  const std::string svg = read_file(svg_path);
  const std::string part = svg_plot(svg, "cartpole_vtrace (2 seeds)");
  ASSERT_FALSE(part.empty()) << svg;
  EXPECT_GT(path_points(part), 3u);
  EXPECT_TRUE(contains(svg, "<polygon")) << "the band";
  EXPECT_TRUE(contains(svg, "<text>wall time (s)</text>")) << "seconds for a run of seconds";
}

TEST_F(PlotRuns, ASeedWhoseMetricIsOnlyNullLeavesTheBandOfTheOthers) {
  // A third seed of the same config that never ended an episode: return_mean is null in every row.
  const std::string nulls = out_ + "/nulls/cartpole_vtrace-seed3";
  fs::create_directories(nulls);
  {
    std::ofstream(nulls + "/config.lua") << replaced(read_file(dir(1) + "/config.lua"), "  seed = 2,", "  seed = 3,");
    std::ofstream(nulls + "/metrics.jsonl") << "{\"time_s\": 1, \"frames\": 100, \"return_mean\": null}\n"
                                               "{\"time_s\": 2, \"frames\": 200, \"return_mean\": null}\n";
  }
  const std::string svg_path = out_ + "/nulls.svg";
  const Result r = plot({dir(0), dir(1), nulls, "-o", svg_path});
  ASSERT_EQ(r.exit_code, std::optional<int>(0)) << r.output;
  EXPECT_TRUE(contains(r.output, "run " + nulls + " has no metric return_mean: left out of its chart")) << r.output;
  EXPECT_FALSE(contains(r.output, "do not overlap")) << r.output;
  const std::string svg = read_file(svg_path);
  EXPECT_FALSE(svg_plot(svg, "cartpole_vtrace (3 seeds)").empty()) << r.output;
  EXPECT_TRUE(contains(svg, "<polygon")) << "the band of seeds 1 and 2";
}

uint32_t big_endian(const std::string& s, size_t at) {
  uint32_t v = 0;
  for (size_t k = 0; k < 4; ++k) v = (v << 8) | static_cast<unsigned char>(s[at + k]);
  return v;
}

TEST_F(PlotRuns, PngHasOnePanelPerMetric) {
  const std::string png_path = out_ + "/two.png";
  const Result r = plot({dir(0), dir(1), "--metric", "return_mean", "--metric", "fps", "-o", png_path});
  ASSERT_EQ(r.exit_code, std::optional<int>(0)) << r.output;
  const std::string png = read_file(png_path);
  ASSERT_GT(png.size(), 33u);
  EXPECT_EQ(png.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  EXPECT_EQ(png.substr(12, 4), "IHDR");
  EXPECT_EQ(big_endian(png, 16), 900u);
  EXPECT_EQ(big_endian(png, 20), 840u);
}

// A run of another env beside the two CartPole seeds: its own panel beside theirs, never their
// axis; the figure's title, size and smoothing as asked; the CSV holds what was drawn.
TEST_F(PlotRuns, RunsOfTwoEnvsArePanelsSideBySideWithReadableTicksAndTheirCsv) {
  const std::string catch_run = out_ + "/envs/catch_vtrace-seed1";
  fs::create_directories(catch_run);
  {
    std::string config = replaced(read_file(dir(0) + "/config.lua"), "    id = \"CartPole-v1\",", "    id = \"Catch-v0\",");
    std::ofstream(catch_run + "/config.lua") << replaced(config, "  name = \"cartpole_vtrace\",", "  name = \"catch_vtrace\",");
    std::ofstream(catch_run + "/metrics.jsonl") << "{\"time_s\": 1, \"frames\": 100000, \"return_mean\": 0.1}\n"
                                                   "{\"time_s\": 2, \"frames\": 200000, \"return_mean\": 0.4}\n"
                                                   "{\"time_s\": 3, \"frames\": 300000, \"return_mean\": 0.7}\n"
                                                   "{\"time_s\": 4, \"frames\": 400000, \"return_mean\": 1.0}\n";
  }
  const std::string svg_path = out_ + "/envs.svg";
  const std::string csv_path = out_ + "/envs.csv";
  const Result r = plot({dir(0), dir(1), catch_run, "-o", svg_path, "--csv", csv_path, "--title", "Two envs",
                         "--smooth", "2"});
  ASSERT_EQ(r.exit_code, std::optional<int>(0)) << r.output;
  EXPECT_TRUE(contains(r.output, "(3 runs, 2 charts, 2 lines) and " + csv_path)) << r.output;
  const std::string svg = read_file(svg_path);
  EXPECT_TRUE(contains(svg, "<text>Two envs</text>"));
  EXPECT_TRUE(contains(svg, "<text>CartPole-v1: return (mean of the last 100 episodes), smoothed over 2 rows</text>"));
  EXPECT_TRUE(contains(svg, "<text>Catch-v0: return (mean of the last 100 episodes), smoothed over 2 rows</text>"));
  EXPECT_FALSE(svg_plot(svg, "cartpole_vtrace (2 seeds)").empty());
  EXPECT_FALSE(svg_plot(svg, "catch_vtrace (seed 1)").empty());
  // Tick labels in one format: SI prefixes, never 1e+06 beside 200000.
  EXPECT_TRUE(contains(svg, "<text>200k</text>")) << "the frames axis";
  EXPECT_FALSE(contains(svg, "e+0")) << "no scientific notation";

  const std::string csv = read_file(csv_path);
  EXPECT_EQ(csv.substr(0, csv.find('\n')), "metric,env,line,frames,y,low,high");
  // Catch's points, each the mean of itself and the row before (--smooth 2); a single run has no band.
  EXPECT_TRUE(contains(csv, "\nreturn_mean,Catch-v0,catch_vtrace (seed 1),100000,0.1,,\n")) << csv;
  EXPECT_TRUE(contains(csv, "\nreturn_mean,Catch-v0,catch_vtrace (seed 1),400000,0.85,,\n")) << csv;
  // The seeds' line has its band: a low and a high on every row.
  size_t band_rows = 0;
  for (size_t at = csv.find("\nreturn_mean,CartPole-v1,cartpole_vtrace (2 seeds),"); at != std::string::npos;
       at = csv.find("\nreturn_mean,CartPole-v1,cartpole_vtrace (2 seeds),", at + 1)) {
    const std::string row = csv.substr(at + 1, csv.find('\n', at + 1) - at - 1);
    EXPECT_NE(row.back(), ',') << row;
    ++band_rows;
  }
  EXPECT_GT(band_rows, 3u);

  // The size asked for, in pixels.
  const std::string png_path = out_ + "/envs.png";
  ASSERT_EQ(plot({dir(0), catch_run, "-o", png_path, "--size", "1500x500"}).exit_code, std::optional<int>(0));
  const std::string png = read_file(png_path);
  ASSERT_GT(png.size(), 24u);
  EXPECT_EQ(big_endian(png, 16), 1500u);
  EXPECT_EQ(big_endian(png, 20), 500u);
}

TEST_F(PlotRuns, ErrorsSayWhatIsWrong) {
  const Result size = plot({dir(0), "--size", "10", "-o", out_ + "/x.png"});
  EXPECT_EQ(size.exit_code, std::optional<int>(1));
  EXPECT_TRUE(contains(size.output, "--size takes WIDTHxHEIGHT in pixels, e.g. 1200x800, not '10'")) << size.output;
  const Result smooth = plot({dir(0), "--smooth", "0", "-o", out_ + "/x.png"});
  EXPECT_EQ(smooth.exit_code, std::optional<int>(1));
  EXPECT_TRUE(contains(smooth.output, "--smooth takes a whole number from 1 to 100000, not '0'")) << smooth.output;

  const Result unknown = plot({dir(0), "--metric", "return_men", "-o", out_ + "/x.png"});
  EXPECT_EQ(unknown.exit_code, std::optional<int>(1));
  EXPECT_TRUE(contains(unknown.output, "no run has the metric 'return_men' (did you mean return_mean?)")) << unknown.output;
  EXPECT_TRUE(contains(unknown.output, "frames, grad_norm")) << unknown.output;

  const Result missing = plot({out_ + "/nowhere", "-o", out_ + "/x.png"});
  EXPECT_EQ(missing.exit_code, std::optional<int>(1));
  EXPECT_TRUE(contains(missing.output, out_ + "/nowhere: no such directory")) << missing.output;

  const Result unwritable = plot({dir(0), "-o", out_ + "/no-such-dir/x.png"});
  EXPECT_EQ(unwritable.exit_code, std::optional<int>(1));
  EXPECT_TRUE(contains(unwritable.output, "cannot write " + out_ + "/no-such-dir/x.png: No such file or directory"))
      << unwritable.output;

  const Result format = plot({dir(0), "-o", out_ + "/x.pdf"});
  EXPECT_EQ(format.exit_code, std::optional<int>(1));
  EXPECT_TRUE(contains(format.output, "must end in .png or .svg")) << format.output;

  const std::string empty_path = make_temp_dir("moonseed-plot-path");
  const Result no_gnuplot = plot({dir(0), "-o", out_ + "/x.png"}, {"PATH=" + empty_path});
  EXPECT_EQ(no_gnuplot.exit_code, std::optional<int>(1));
  EXPECT_TRUE(contains(no_gnuplot.output, "gnuplot is not installed")) << no_gnuplot.output;
  EXPECT_TRUE(contains(no_gnuplot.output, "gnuplot-nox")) << no_gnuplot.output;
  EXPECT_FALSE(fs::exists(out_ + "/x.png"));
  EXPECT_FALSE(fs::exists(out_ + "/x.png.partial"));
}

}  // namespace
}  // namespace moonseed::testing
